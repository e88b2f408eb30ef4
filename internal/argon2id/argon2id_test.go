package argon2id

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"
)

// implementations runs f with each block function the processor has: the
// portable one always, and AVX2 and AVX-512 where there are.
func implementations(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	saved := impl
	t.Cleanup(func() { impl = saved })
	for _, i := range impls {
		t.Run(implNames[i], func(t *testing.T) {
			impl = i
			f(t)
		})
	}
}

var implNames = []string{"generic", "avx2", "avx512"}

// TestBlockFunction says which block function hashes here, and checks that
// GODEBUG=cpu.avx2=off,cpu.avx512f=off leaves the portable one: the switch
// an operator has when the assembly is suspect.
func TestBlockFunction(t *testing.T) {
	t.Logf("block function: %s", implNames[impl])
	godebug := os.Getenv("GODEBUG")
	if cpuOff(godebug, "avx2") && cpuOff(godebug, "avx512f") && impl != implGeneric {
		t.Errorf("GODEBUG=%s: block function %s, want generic", godebug, implNames[impl])
	}
}

// cpuOff reports whether the GODEBUG setting godebug turns the CPU feature
// off, the last setting for it (or for all) winning.
func cpuOff(godebug, feature string) bool {
	off := false
	for _, f := range strings.Split(godebug, ",") {
		switch f {
		case "cpu.all=off", "cpu." + feature + "=off":
			off = true
		case "cpu.all=on", "cpu." + feature + "=on":
			off = false
		}
	}
	return off
}

func repeat(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

// TestRFC9106 is the argon2id test vector of RFC 9106 section 5.3, with a
// secret and associated data.
func TestRFC9106(t *testing.T) {
	want, _ := hex.DecodeString("0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659")
	implementations(t, func(t *testing.T) {
		got := KeyWith(repeat(1, 32), repeat(2, 16), repeat(3, 8), repeat(4, 12), 3, 32, 4, 32)
		if !bytes.Equal(got, want) {
			t.Errorf("got %x, want %x", got, want)
		}
	})
}

// TestMatchesXCrypto compares with x/crypto over random passwords, salts,
// parameters and key lengths.
func TestMatchesXCrypto(t *testing.T) {
	implementations(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		n := 300
		if testing.Short() {
			n = 60
		}
		for i := 0; i < n; i++ {
			pw := randBytes(rng, rng.IntN(80))
			salt := randBytes(rng, 8+rng.IntN(40))
			time := uint32(1 + rng.IntN(4))
			threads := uint8(1 + rng.IntN(4))
			memory := uint32(rng.IntN(300))
			keyLen := uint32(4 + rng.IntN(150))
			if i%7 == 0 {
				keyLen = uint32(1 + rng.IntN(4))
			}
			check(t, pw, salt, time, memory, threads, keyLen)
		}
	})
}

// TestDefaultParams compares at the library's parameters, and again with
// the work area of the first hash reused.
func TestDefaultParams(t *testing.T) {
	implementations(t, func(t *testing.T) {
		check(t, []byte("correct horse battery staple"), []byte("0123456789abcdef"), 2, 19456, 1, 32)
		check(t, []byte("hunter22"), []byte("fedcba9876543210"), 2, 19456, 1, 32)
		check(t, []byte("hunter22"), []byte("fedcba9876543210"), 1, 1024, 2, 32)
	})
}

// TestReuseAfterLarger reuses a larger area, left with another hash's
// blocks, for a smaller hash.
func TestReuseAfterLarger(t *testing.T) {
	for i := 0; i < 3; i++ {
		Key([]byte("a"), []byte("saltsalt"), 1, 4096, 1, 32)
		check(t, []byte("b"), []byte("saltsalt"), 3, 64, 1, 32)
		check(t, []byte("b"), []byte("saltsalt"), 2, 33, 3, 32)
	}
}

func TestPanics(t *testing.T) {
	for _, f := range []func(){
		func() { Key([]byte("p"), []byte("saltsalt"), 0, 64, 1, 32) },
		func() { Key([]byte("p"), []byte("saltsalt"), 1, 64, 0, 32) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}

func check(t *testing.T, pw, salt []byte, time, memory uint32, threads uint8, keyLen uint32) {
	t.Helper()
	want := argon2.IDKey(pw, salt, time, memory, threads, keyLen)
	got := Key(pw, salt, time, memory, threads, keyLen)
	if !bytes.Equal(got, want) {
		t.Fatalf("Key(%x, %x, t=%d, m=%d, p=%d, len=%d) = %x, x/crypto %x",
			pw, salt, time, memory, threads, keyLen, got, want)
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// FuzzArgon2idMatchesXCrypto compares with x/crypto on fuzzed passwords,
// salts and small parameters, with each block function the processor has.
func FuzzArgon2idMatchesXCrypto(f *testing.F) {
	f.Add([]byte("password"), []byte("somesalt"), uint8(2), uint16(64), uint8(1), uint8(32), uint8(0))
	f.Add([]byte(""), []byte("saltsalt"), uint8(1), uint16(0), uint8(4), uint8(65), uint8(1))
	f.Add(bytes.Repeat([]byte{0xff}, 100), []byte("0123456789abcdef"), uint8(3), uint16(257), uint8(3), uint8(129), uint8(2))
	f.Fuzz(func(t *testing.T, pw, salt []byte, time uint8, memory uint16, threads uint8, keyLen uint8, which uint8) {
		time = 1 + time%4
		threads = 1 + threads%4
		m := uint32(memory % 512)
		kl := uint32(keyLen)
		if kl == 0 {
			kl = 1
		}
		saved := impl
		defer func() { impl = saved }()
		impl = impls[int(which)%len(impls)]
		want := argon2.IDKey(pw, salt, uint32(time), m, threads, kl)
		got := Key(pw, salt, uint32(time), m, threads, kl)
		if !bytes.Equal(got, want) {
			t.Fatalf("Key(t=%d, m=%d, p=%d, len=%d) with the %s block function = %x, x/crypto %x",
				time, m, threads, kl, implNames[impl], got, want)
		}
	})
}

// BenchmarkIDKey hashes at the library's parameters with the best block
// function here (impl=new), with each other one the processor has, and
// with x/crypto.
func BenchmarkIDKey(b *testing.B) {
	pw, salt := []byte("correct horse battery staple"), []byte("0123456789abcdef")
	saved := impl
	defer func() { impl = saved }()
	run := func(name string, f func() []byte) {
		b.Run(name+"/m=19456,t=2,p=1", func(b *testing.B) {
			b.ReportAllocs()
			cpu0, ok := processCPU()
			for b.Loop() {
				f()
			}
			// CPU time of the whole process per hash, garbage
			// collection included: steadier than the wall time on a
			// busy machine.
			if cpu1, _ := processCPU(); ok {
				b.ReportMetric(float64(cpu1-cpu0)/1e6/float64(b.N), "cpu-ms/op")
			}
		})
	}
	for k := len(impls) - 1; k >= 0; k-- {
		name := "impl=new"
		if k < len(impls)-1 {
			name += "-" + implNames[impls[k]]
		}
		impl = impls[k]
		run(name, func() []byte { return Key(pw, salt, 2, 19456, 1, 32) })
	}
	impl = saved
	run("impl=xcrypto", func() []byte { return argon2.IDKey(pw, salt, 2, 19456, 1, 32) })
}
