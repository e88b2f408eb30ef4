//go:build !amd64 || !gc || purego

package argon2id

// useAVX2 is never set here; it exists for the tests.
var useAVX2 = false

func compress(out, prev, ref *block, scratch *[2]block, xor bool) {
	compressGeneric(out, prev, ref, scratch, xor)
}
