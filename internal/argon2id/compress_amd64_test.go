//go:build amd64 && gc && !purego

package argon2id

import (
	"math/rand/v2"
	"testing"
)

// TestCompress compares the assembly block functions with the portable one
// on random blocks, with and without XOR, and with out the same as prev.
func TestCompress(t *testing.T) {
	if impl == implGeneric {
		t.Skip("neither AVX2 nor AVX-512 here")
	}
	asm := []func(out, prev, ref *block, scratch *[2]block, xor bool){nil, compressAVX2, compressAVX512}
	rng := rand.New(rand.NewPCG(3, 4))
	var scratch [2]block
	for _, which := range impls[1:] {
		f := asm[which]
		for i := 0; i < 200; i++ {
			var prev, ref, old block
			for k := range prev {
				prev[k], ref[k], old[k] = rng.Uint64(), rng.Uint64(), rng.Uint64()
			}
			for _, xor := range []bool{false, true} {
				a, b := old, old
				compressGeneric(&a, &prev, &ref, &scratch, xor)
				f(&b, &prev, &ref, &scratch, xor)
				if a != b {
					t.Fatalf("%s, xor=%v: the block functions differ", implNames[which], xor)
				}
			}
			a, b := prev, prev
			compressGeneric(&a, &a, &ref, &scratch, false)
			f(&b, &b, &ref, &scratch, false)
			if a != b {
				t.Fatalf("%s, out == prev: the block functions differ", implNames[which])
			}
		}
	}
}
