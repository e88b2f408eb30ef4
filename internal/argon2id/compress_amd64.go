//go:build amd64 && gc && !purego

package argon2id

// useAVX2 selects the AVX2 block function; tests clear it to run the
// portable one.
var useAVX2 = hasAVX2()

//go:noescape
func compressAVX2(out, prev, ref *block, scratch *[2]block, xor bool)

func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

func xgetbv() (eax, edx uint32)

// hasAVX2 reports whether the processor has AVX2 and the operating system
// saves the YMM registers.
func hasAVX2() bool {
	if max, _, _, _ := cpuid(0, 0); max < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 { // XMM and YMM state
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

func compress(out, prev, ref *block, scratch *[2]block, xor bool) {
	if useAVX2 {
		compressAVX2(out, prev, ref, scratch, xor)
		return
	}
	compressGeneric(out, prev, ref, scratch, xor)
}
