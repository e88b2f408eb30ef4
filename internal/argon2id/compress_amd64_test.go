//go:build amd64 && gc && !purego

package argon2id

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestGODEBUGTurnsOffAssembly runs TestBlockFunction in a copy of this test
// binary with GODEBUG=cpu.avx2=off,cpu.avx512f=off, which must hash with the
// portable block function whatever the processor has.
func TestGODEBUGTurnsOffAssembly(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBlockFunction$", "-test.v", "-test.count=1")
	godebug := "cpu.avx2=off,cpu.avx512f=off"
	if old := os.Getenv("GODEBUG"); old != "" {
		godebug = old + "," + godebug
	}
	cmd.Env = append(os.Environ(), "GODEBUG="+godebug)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("GODEBUG=%s: %v\n%s", godebug, err, out)
	}
	if !strings.Contains(string(out), "block function: generic") {
		t.Fatalf("GODEBUG=%s: the portable block function did not run:\n%s", godebug, out)
	}
	t.Logf("GODEBUG=%s: block function: generic", godebug)
}

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
