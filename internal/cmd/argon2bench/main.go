// Command argon2bench measures raw argon2id hashing side by side: the
// module's internal/argon2id, golang.org/x/crypto/argon2, and @node-rs/argon2
// under Node (hash.mjs beside this file; run npm ci here first), all at the
// library's default parameters (m=19456 KiB, t=2, p=1, 32-byte keys), the
// same number of hashes at a time, in rounds that alternate the systems. It
// prints each system's median rate over the rounds and its median CPU time
// per hash (the whole process's, garbage collection included), each with
// its range, and the ratios of the new implementation to node-rs and to
// x/crypto.
//
//	cd internal/cmd/argon2bench && npm ci && go run . -rounds 3 -seconds 5 -concurrency 2
package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/latchkit/auth/internal/argon2id"
	"golang.org/x/crypto/argon2"
)

const (
	memory  = 19456
	passes  = 2
	threads = 1
	keyLen  = 32
)

var (
	password = []byte("correct horse battery staple")
	salt     = []byte("0123456789abcdef")
)

type system struct {
	name string
	run  func(d time.Duration, concurrency int) (result, error)
}

// result is one system's run: hashes per second of wall time, and
// milliseconds of CPU (of the whole process, every thread) per hash, which
// depends less on what else the machine runs.
type result struct{ rate, cpuMS float64 }

func main() {
	rounds := flag.Int("rounds", 3, "rounds; each runs every system once")
	seconds := flag.Float64("seconds", 5, "seconds per system per round")
	concurrency := flag.Int("concurrency", 2, "hashes at a time")
	node := flag.String("node", "node", "the Node binary")
	dir := flag.String("dir", ".", "the directory of hash.mjs and its node_modules")
	noNode := flag.Bool("no-node", false, "leave out @node-rs/argon2")
	flag.Parse()
	d := time.Duration(*seconds * float64(time.Second))

	want := argon2.IDKey(password, salt, passes, memory, threads, keyLen)
	if got := argon2id.Key(password, salt, passes, memory, threads, keyLen); !bytes.Equal(got, want) {
		log.Fatalf("internal/argon2id gives %x, x/crypto %x", got, want)
	}
	systems := []system{
		{"internal/argon2id", goHashing(func() []byte {
			return argon2id.Key(password, salt, passes, memory, threads, keyLen)
		})},
		{"x/crypto/argon2", goHashing(func() []byte {
			return argon2.IDKey(password, salt, passes, memory, threads, keyLen)
		})},
	}
	if !*noNode {
		script, err := filepath.Abs(filepath.Join(*dir, "hash.mjs"))
		if err != nil {
			log.Fatal(err)
		}
		systems = append(systems, system{"@node-rs/argon2", nodeHashing(*node, script, hex.EncodeToString(want))})
	}

	fmt.Printf("argon2id m=%d t=%d p=%d, %d-byte keys, %d hashes at a time, %d rounds of %v per system, GOMAXPROCS=%d, %s\n",
		memory, passes, threads, keyLen, *concurrency, *rounds, d, runtime.GOMAXPROCS(0), runtime.Version())
	rates := make([][]float64, len(systems))
	cpus := make([][]float64, len(systems))
	for r := 0; r < *rounds; r++ {
		// Each round starts with the next system, so none always runs
		// first or last.
		for k := range systems {
			i := (r + k) % len(systems)
			res, err := systems[i].run(d, *concurrency)
			if err != nil {
				log.Fatalf("%s: %v", systems[i].name, err)
			}
			rates[i] = append(rates[i], res.rate)
			cpus[i] = append(cpus[i], res.cpuMS)
			fmt.Printf("round %d  %-18s %7.1f hashes/s  %6.2f ms CPU/hash\n", r+1, systems[i].name, res.rate, res.cpuMS)
		}
	}
	fmt.Println()
	med := make([]float64, len(systems))
	cpu := make([]float64, len(systems))
	for i, s := range systems {
		med[i], cpu[i] = median(rates[i]), median(cpus[i])
		fmt.Printf("%-18s median %7.1f hashes/s (range %.1f–%.1f), %6.2f ms CPU/hash (range %.2f–%.2f)\n",
			s.name, med[i], slices.Min(rates[i]), slices.Max(rates[i]), cpu[i], slices.Min(cpus[i]), slices.Max(cpus[i]))
	}
	fmt.Printf("internal/argon2id / x/crypto: %.2f× the hashes/s, %.2f× the CPU/hash\n", med[0]/med[1], cpu[0]/cpu[1])
	if len(systems) > 2 {
		fmt.Printf("internal/argon2id / @node-rs/argon2: %.2f× the hashes/s, %.2f× the CPU/hash\n", med[0]/med[2], cpu[0]/cpu[2])
	}
}

// goHashing runs hash concurrency at a time for d.
func goHashing(hash func() []byte) func(time.Duration, int) (result, error) {
	return func(d time.Duration, concurrency int) (result, error) {
		runtime.GC()
		hash() // warm up, as the Node side does
		var n atomic.Int64
		var wg sync.WaitGroup
		cpu0 := cpuTime()
		start := time.Now()
		end := start.Add(d)
		for range concurrency {
			wg.Go(func() {
				for time.Now().Before(end) {
					hash()
					n.Add(1)
				}
			})
		}
		wg.Wait()
		elapsed, cpu := time.Since(start), cpuTime()-cpu0
		return result{float64(n.Load()) / elapsed.Seconds(), cpu.Seconds() * 1000 / float64(n.Load())}, nil
	}
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// nodeHashing runs hash.mjs, which checks its key against want.
func nodeHashing(node, script, want string) func(time.Duration, int) (result, error) {
	return func(d time.Duration, concurrency int) (result, error) {
		cmd := exec.Command(node, script, fmt.Sprint(d.Seconds()), fmt.Sprint(concurrency))
		cmd.Dir = filepath.Dir(script)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return result{}, err
		}
		var res struct {
			Hashes     int
			Seconds    float64
			CPUSeconds float64
			Check      string
		}
		if err := json.Unmarshal(out, &res); err != nil {
			return result{}, fmt.Errorf("%v in %q", err, out)
		}
		if res.Check != want {
			return result{}, fmt.Errorf("key %s, x/crypto %s", res.Check, want)
		}
		return result{float64(res.Hashes) / res.Seconds, res.CPUSeconds * 1000 / float64(res.Hashes)}, nil
	}
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
