//go:build !amd64 || !gc || purego

package argon2id

// The block functions of amd64, named here for the tests.
const (
	implGeneric = iota
	implAVX2
	implAVX512
)

// impl and impls exist for the tests: here there is only the portable
// block function.
var (
	impl  = implGeneric
	impls = []int{implGeneric}
)

func compress(out, prev, ref *block, scratch *[2]block, xor bool) {
	compressGeneric(out, prev, ref, scratch, xor)
}
