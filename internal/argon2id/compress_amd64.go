//go:build amd64 && gc && !purego

package argon2id

import "golang.org/x/sys/cpu"

// The block functions, fastest last.
const (
	implGeneric = iota
	implAVX2
	implAVX512
)

// impl is the block function in use: the best the processor has. Tests set
// it lower to run the others.
var impl = detect()

// impls lists the block functions the processor can run.
var impls = available(impl)

//go:noescape
func compressAVX2(out, prev, ref *block, scratch *[2]block, xor bool)

//go:noescape
func compressAVX512(out, prev, ref *block, scratch *[2]block, xor bool)

// detect returns the best block function that the processor has and whose
// registers the operating system saves. It asks x/sys/cpu, which honours
// GODEBUG's cpu.avx512f=off and cpu.avx2=off, so that an operator can turn
// the assembly off without a rebuild. The AVX-512 function needs AVX512F
// alone (Z registers only, no AVX512VL or BW); it also asks for AVX2, which
// every AVX-512 processor has, because impls assumes that each function
// below the one in use may run too, and cpu.avx2=off must hold for them.
func detect() int {
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX2:
		return implAVX512
	case cpu.X86.HasAVX2:
		return implAVX2
	}
	return implGeneric
}

func available(best int) []int {
	var s []int
	for i := implGeneric; i <= best; i++ {
		s = append(s, i)
	}
	return s
}

func compress(out, prev, ref *block, scratch *[2]block, xor bool) {
	switch impl {
	case implAVX512:
		compressAVX512(out, prev, ref, scratch, xor)
	case implAVX2:
		compressAVX2(out, prev, ref, scratch, xor)
	default:
		compressGeneric(out, prev, ref, scratch, xor)
	}
}
