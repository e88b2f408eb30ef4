package argon2id

import "math/bits"

// compressGeneric is the block function G in portable Go: out = R ^ P(R)
// with R = prev ^ ref, or out ^= R ^ P(R) when xor is set (passes after the
// first). P is the BlaMka permutation applied to the 8 rows of R and then to
// its 8 columns, each seen as 16 words. out may be prev (the address blocks).
func compressGeneric(out, prev, ref *block, scratch *[2]block, xor bool) {
	r, q := &scratch[0], &scratch[1]
	for i := range r {
		r[i] = prev[i] ^ ref[i]
	}
	if xor {
		// The old block is folded in now, so the last step reads two
		// blocks instead of three.
		for i := range q {
			q[i] = r[i] ^ out[i]
		}
	} else {
		*q = *r
	}
	// Rows: words 16i .. 16i+15.
	for i := 0; i < blockWords; i += 16 {
		v := (*[16]uint64)(r[i : i+16])
		permute(
			&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
			&v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14], &v[15])
	}
	// Columns: word pairs 2i, 2i+1 of each row.
	for i := 0; i < 16; i += 2 {
		permute(
			&r[i], &r[i+1], &r[i+16], &r[i+17], &r[i+32], &r[i+33], &r[i+48], &r[i+49],
			&r[i+64], &r[i+65], &r[i+80], &r[i+81], &r[i+96], &r[i+97], &r[i+112], &r[i+113])
	}
	for i := range out {
		out[i] = q[i] ^ r[i]
	}
}

// permute is BlaMka's P on 16 words: a BLAKE2b round whose additions
// carry 2*lo(a)*lo(b), with GB written out so that it all stays in
// registers.
func permute(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15 *uint64) {
	v0, v1, v2, v3 := *p0, *p1, *p2, *p3
	v4, v5, v6, v7 := *p4, *p5, *p6, *p7
	v8, v9, v10, v11 := *p8, *p9, *p10, *p11
	v12, v13, v14, v15 := *p12, *p13, *p14, *p15

	v0 += v4 + 2*uint64(uint32(v0))*uint64(uint32(v4))
	v12 = bits.RotateLeft64(v12^v0, -32)
	v8 += v12 + 2*uint64(uint32(v8))*uint64(uint32(v12))
	v4 = bits.RotateLeft64(v4^v8, -24)
	v0 += v4 + 2*uint64(uint32(v0))*uint64(uint32(v4))
	v12 = bits.RotateLeft64(v12^v0, -16)
	v8 += v12 + 2*uint64(uint32(v8))*uint64(uint32(v12))
	v4 = bits.RotateLeft64(v4^v8, -63)

	v1 += v5 + 2*uint64(uint32(v1))*uint64(uint32(v5))
	v13 = bits.RotateLeft64(v13^v1, -32)
	v9 += v13 + 2*uint64(uint32(v9))*uint64(uint32(v13))
	v5 = bits.RotateLeft64(v5^v9, -24)
	v1 += v5 + 2*uint64(uint32(v1))*uint64(uint32(v5))
	v13 = bits.RotateLeft64(v13^v1, -16)
	v9 += v13 + 2*uint64(uint32(v9))*uint64(uint32(v13))
	v5 = bits.RotateLeft64(v5^v9, -63)

	v2 += v6 + 2*uint64(uint32(v2))*uint64(uint32(v6))
	v14 = bits.RotateLeft64(v14^v2, -32)
	v10 += v14 + 2*uint64(uint32(v10))*uint64(uint32(v14))
	v6 = bits.RotateLeft64(v6^v10, -24)
	v2 += v6 + 2*uint64(uint32(v2))*uint64(uint32(v6))
	v14 = bits.RotateLeft64(v14^v2, -16)
	v10 += v14 + 2*uint64(uint32(v10))*uint64(uint32(v14))
	v6 = bits.RotateLeft64(v6^v10, -63)

	v3 += v7 + 2*uint64(uint32(v3))*uint64(uint32(v7))
	v15 = bits.RotateLeft64(v15^v3, -32)
	v11 += v15 + 2*uint64(uint32(v11))*uint64(uint32(v15))
	v7 = bits.RotateLeft64(v7^v11, -24)
	v3 += v7 + 2*uint64(uint32(v3))*uint64(uint32(v7))
	v15 = bits.RotateLeft64(v15^v3, -16)
	v11 += v15 + 2*uint64(uint32(v11))*uint64(uint32(v15))
	v7 = bits.RotateLeft64(v7^v11, -63)

	v0 += v5 + 2*uint64(uint32(v0))*uint64(uint32(v5))
	v15 = bits.RotateLeft64(v15^v0, -32)
	v10 += v15 + 2*uint64(uint32(v10))*uint64(uint32(v15))
	v5 = bits.RotateLeft64(v5^v10, -24)
	v0 += v5 + 2*uint64(uint32(v0))*uint64(uint32(v5))
	v15 = bits.RotateLeft64(v15^v0, -16)
	v10 += v15 + 2*uint64(uint32(v10))*uint64(uint32(v15))
	v5 = bits.RotateLeft64(v5^v10, -63)

	v1 += v6 + 2*uint64(uint32(v1))*uint64(uint32(v6))
	v12 = bits.RotateLeft64(v12^v1, -32)
	v11 += v12 + 2*uint64(uint32(v11))*uint64(uint32(v12))
	v6 = bits.RotateLeft64(v6^v11, -24)
	v1 += v6 + 2*uint64(uint32(v1))*uint64(uint32(v6))
	v12 = bits.RotateLeft64(v12^v1, -16)
	v11 += v12 + 2*uint64(uint32(v11))*uint64(uint32(v12))
	v6 = bits.RotateLeft64(v6^v11, -63)

	v2 += v7 + 2*uint64(uint32(v2))*uint64(uint32(v7))
	v13 = bits.RotateLeft64(v13^v2, -32)
	v8 += v13 + 2*uint64(uint32(v8))*uint64(uint32(v13))
	v7 = bits.RotateLeft64(v7^v8, -24)
	v2 += v7 + 2*uint64(uint32(v2))*uint64(uint32(v7))
	v13 = bits.RotateLeft64(v13^v2, -16)
	v8 += v13 + 2*uint64(uint32(v8))*uint64(uint32(v13))
	v7 = bits.RotateLeft64(v7^v8, -63)

	v3 += v4 + 2*uint64(uint32(v3))*uint64(uint32(v4))
	v14 = bits.RotateLeft64(v14^v3, -32)
	v9 += v14 + 2*uint64(uint32(v9))*uint64(uint32(v14))
	v4 = bits.RotateLeft64(v4^v9, -24)
	v3 += v4 + 2*uint64(uint32(v3))*uint64(uint32(v4))
	v14 = bits.RotateLeft64(v14^v3, -16)
	v9 += v14 + 2*uint64(uint32(v9))*uint64(uint32(v14))
	v4 = bits.RotateLeft64(v4^v9, -63)

	*p0, *p1, *p2, *p3 = v0, v1, v2, v3
	*p4, *p5, *p6, *p7 = v4, v5, v6, v7
	*p8, *p9, *p10, *p11 = v8, v9, v10, v11
	*p12, *p13, *p14, *p15 = v12, v13, v14, v15
}
