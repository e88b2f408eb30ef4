// Package argon2id computes argon2id (RFC 9106, version 0x13), with the
// same output as golang.org/x/crypto/argon2.IDKey for every input.
//
// It differs from x/crypto in how the work is done, not in what is
// computed: the compression function G reads the previous and the reference
// block, XORs them and runs the BlaMka rounds in registers, and XORs the
// result into the output block as it stores it, with no separate passes over
// 1 KiB blocks; on amd64 the rounds work on vectors, with AVX-512 on the
// whole block at once and with AVX2 on two rows or columns at a time (a
// portable Go block function is there for other processors, and for the
// tests); and the memory of one hash is kept for the next one in a pool
// rather than allocated and zeroed for each.
//
// The block function is chosen once, at start-up, from what
// golang.org/x/sys/cpu reports, so GODEBUG turns the assembly off without a
// rebuild: cpu.avx512f=off leaves AVX2, and cpu.avx2=off (alone or with
// cpu.avx512f=off) the portable Go. Building with -tags purego leaves the
// assembly out.
package argon2id

import (
	"encoding/binary"
	"sync"

	"golang.org/x/crypto/blake2b"
)

// Version is the argon2 version computed: 0x13 (19), the one of RFC 9106.
const Version = 0x13

const (
	blockWords = 128 // 64-bit words in a 1 KiB block
	syncPoints = 4   // slices per pass
	typeID     = 2   // argon2id's type in H0 and in the address blocks
)

type block [blockWords]uint64

// Key derives a keyLen-byte key from password and salt with argon2id at time
// passes over memory KiB with threads lanes, as x/crypto's IDKey does.
func Key(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
	return KeyWith(password, salt, nil, nil, time, memory, threads, keyLen)
}

// KeyWith is Key with RFC 9106's optional secret value K and associated data
// X, which go into H0 after the salt.
func KeyWith(password, salt, secret, data []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
	if time < 1 {
		panic("argon2id: number of passes too small")
	}
	if threads < 1 {
		panic("argon2id: parallelism degree too low")
	}
	p := uint32(threads)
	h0 := initialHash(password, salt, secret, data, time, memory, p, keyLen)

	// The memory is a whole number of segments: 4 per lane, at least 2
	// blocks each.
	blocks := memory / (syncPoints * p) * (syncPoints * p)
	if blocks < 2*syncPoints*p {
		blocks = 2 * syncPoints * p
	}
	w := getWork(blocks)
	defer putWork(w)
	B := w.blocks[:blocks]
	laneLen := blocks / p

	// The first two blocks of each lane come from H0. No other block is
	// cleared: pass 0 writes every block (without XOR) before any block is
	// read as a previous or a reference block, so what a reused area held
	// before is never read.
	var buf [1024]byte
	for lane := uint32(0); lane < p; lane++ {
		binary.LittleEndian.PutUint32(h0[blake2b.Size+4:], lane)
		for i := uint32(0); i < 2; i++ {
			binary.LittleEndian.PutUint32(h0[blake2b.Size:], i)
			hashPrime(buf[:], h0[:])
			b := &B[lane*laneLen+i]
			for k := range b {
				b[k] = binary.LittleEndian.Uint64(buf[k*8:])
			}
		}
	}

	fill(B, w, time, blocks, p)

	// The final block is the XOR of each lane's last block.
	final := B[blocks-1]
	for lane := uint32(0); lane < p-1; lane++ {
		last := &B[lane*laneLen+laneLen-1]
		for k := range final {
			final[k] ^= last[k]
		}
	}
	for k, v := range final {
		binary.LittleEndian.PutUint64(buf[k*8:], v)
	}
	key := make([]byte, keyLen)
	hashPrime(key, buf[:])
	return key
}

// initialHash returns H0 with 8 bytes of room after it for the block index
// and the lane.
func initialHash(password, salt, secret, data []byte, time, memory, threads, keyLen uint32) [blake2b.Size + 8]byte {
	var h0 [blake2b.Size + 8]byte
	var n [4]byte
	h, _ := blake2b.New512(nil)
	for _, v := range []uint32{threads, keyLen, memory, time, Version, typeID} {
		binary.LittleEndian.PutUint32(n[:], v)
		h.Write(n[:])
	}
	for _, in := range [][]byte{password, salt, secret, data} {
		binary.LittleEndian.PutUint32(n[:], uint32(len(in)))
		h.Write(n[:])
		h.Write(in)
	}
	h.Sum(h0[:0])
	return h0
}

// hashPrime is RFC 9106's variable-length hash H' of in, filling out.
func hashPrime(out, in []byte) {
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(out)))
	if len(out) <= blake2b.Size {
		h, _ := blake2b.New(len(out), nil)
		h.Write(n[:])
		h.Write(in)
		h.Sum(out[:0])
		return
	}
	var v [blake2b.Size]byte
	h, _ := blake2b.New512(nil)
	h.Write(n[:])
	h.Write(in)
	h.Sum(v[:0])
	copy(out, v[:32])
	out = out[32:]
	for len(out) > blake2b.Size {
		v = blake2b.Sum512(v[:])
		copy(out, v[:32])
		out = out[32:]
	}
	h, _ = blake2b.New(len(out), nil)
	h.Write(v[:])
	h.Sum(out[:0])
}

// work is the memory of one hash: the blocks, and per lane the scratch of
// the block function and the address blocks.
type work struct {
	blocks []block
	lanes  []laneWork
}

type laneWork struct {
	scratch   [2]block
	addresses block
	input     block
}

var pool sync.Pool

// getWork returns a work area of at least n blocks. Its contents are
// whatever a previous hash left there.
func getWork(n uint32) *work {
	w, _ := pool.Get().(*work)
	if w == nil || uint32(cap(w.blocks)) < n {
		w = &work{blocks: make([]block, n)}
	}
	return w
}

func putWork(w *work) { pool.Put(w) }

func (w *work) lane(i uint32) *laneWork {
	for uint32(len(w.lanes)) <= i {
		w.lanes = append(w.lanes, laneWork{})
	}
	return &w.lanes[i]
}

// fill runs the passes over B.
func fill(B []block, w *work, time, blocks, threads uint32) {
	laneLen := blocks / threads
	segLen := laneLen / syncPoints
	lw := make([]*laneWork, threads)
	for l := range lw {
		lw[l] = w.lane(uint32(l))
	}
	s := segment{B: B, time: time, blocks: blocks, lanes: threads, laneLen: laneLen, segLen: segLen}
	for pass := uint32(0); pass < time; pass++ {
		for slice := uint32(0); slice < syncPoints; slice++ {
			if threads == 1 {
				s.run(lw[0], pass, slice, 0)
				continue
			}
			var wg sync.WaitGroup
			for lane := uint32(0); lane < threads; lane++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.run(lw[lane], pass, slice, lane)
				}()
			}
			wg.Wait()
		}
	}
}

type segment struct {
	B                      []block
	time, blocks           uint32
	lanes, laneLen, segLen uint32
}

// run computes one segment: the blocks of slice in lane during pass.
func (s *segment) run(lw *laneWork, pass, slice, lane uint32) {
	B := s.B
	// argon2id takes its reference indices from address blocks
	// (data-independent) in the first half of pass 0, and from the
	// previous block (data-dependent) after that.
	independent := pass == 0 && slice < syncPoints/2
	var zero block
	if independent {
		in := &lw.input
		*in = block{}
		in[0], in[1], in[2] = uint64(pass), uint64(lane), uint64(slice)
		in[3], in[4], in[5] = uint64(s.blocks), uint64(s.time), typeID
	}
	nextAddresses := func() {
		lw.input[6]++
		compress(&lw.addresses, &lw.input, &zero, &lw.scratch, false)
		compress(&lw.addresses, &lw.addresses, &zero, &lw.scratch, false)
	}

	index := uint32(0)
	if pass == 0 && slice == 0 {
		index = 2 // the two blocks from H0
		if independent {
			nextAddresses()
		}
	}
	offset := lane*s.laneLen + slice*s.segLen + index
	prev := offset - 1
	if index == 0 && slice == 0 {
		prev = offset + s.laneLen - 1 // the lane's last block
	}
	xor := pass > 0
	for ; index < s.segLen; index++ {
		var rnd uint64
		if independent {
			if index%blockWords == 0 {
				nextAddresses()
			}
			rnd = lw.addresses[index%blockWords]
		} else {
			rnd = B[prev][0]
		}
		ref := s.refIndex(rnd, pass, slice, lane, index)
		compress(&B[offset], &B[prev], &B[ref], &lw.scratch, xor)
		prev = offset
		offset++
	}
}

// refIndex maps the pseudo-random value rnd of the block at index in
// the segment to the index in B of its reference block (RFC 9106 3.4.1.2).
func (s *segment) refIndex(rnd uint64, pass, slice, lane, index uint32) uint32 {
	refLane := uint32(rnd>>32) % s.lanes
	if pass == 0 && slice == 0 {
		refLane = lane
	}
	same := refLane == lane
	// The reference area: its size, and where it starts in the lane.
	var size, start uint32
	if pass == 0 {
		size = slice * s.segLen // the finished slices of this pass
		if same {
			size += index - 1 // and this segment's blocks before the previous one
		} else if index == 0 {
			size--
		}
	} else {
		size = (syncPoints - 1) * s.segLen // the other three slices
		if same {
			size += index - 1
		} else if index == 0 {
			size--
		}
		start = (slice + 1) % syncPoints * s.segLen
	}
	x := rnd & 0xffffffff
	x = x * x >> 32
	x = uint64(size) * x >> 32
	rel := uint64(size) - 1 - x
	return refLane*s.laneLen + uint32((uint64(start)+rel)%uint64(s.laneLen))
}
