//go:build amd64 && gc && !purego

package argon2id

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

func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

func xgetbv() (eax, edx uint32)

// detect returns the best block function that the processor has and whose
// registers the operating system saves: AVX-512 (AVX512F) or AVX2.
func detect() int {
	if max, _, _, _ := cpuid(0, 0); max < 7 {
		return implGeneric
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return implGeneric
	}
	xcr0, _ := xgetbv()
	_, ebx7, _, _ := cpuid(7, 0)
	const avx2, avx512f = 1 << 5, 1 << 16
	const ymm, zmm = 0x06, 0xe6 // XMM|YMM; and opmask, ZMM0-15 upper halves, ZMM16-31
	switch {
	case xcr0&zmm == zmm && ebx7&avx512f != 0 && ebx7&avx2 != 0:
		return implAVX512
	case xcr0&ymm == ymm && ebx7&avx2 != 0:
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
