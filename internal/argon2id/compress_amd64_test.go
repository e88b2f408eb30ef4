//go:build amd64 && gc && !purego

package argon2id

import (
	"math/rand/v2"
	"testing"
)

// TestCompress compares the two block functions on random blocks, with
// and without XOR, and with out the same as prev.
func TestCompress(t *testing.T) {
	if !hasAVX2Impl() {
		t.Skip("no AVX2 here")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var scratch [2]block
	for i := 0; i < 200; i++ {
		var prev, ref, old block
		for k := range prev {
			prev[k], ref[k], old[k] = rng.Uint64(), rng.Uint64(), rng.Uint64()
		}
		for _, xor := range []bool{false, true} {
			a, b := old, old
			compressGeneric(&a, &prev, &ref, &scratch, xor)
			compressAVX2(&b, &prev, &ref, &scratch, xor)
			if a != b {
				t.Fatalf("xor=%v: the block functions differ", xor)
			}
		}
		a, b := prev, prev
		compressGeneric(&a, &a, &ref, &scratch, false)
		compressAVX2(&b, &b, &ref, &scratch, false)
		if a != b {
			t.Fatal("out == prev: the block functions differ")
		}
	}
}
