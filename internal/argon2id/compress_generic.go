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
// carry 2*lo(a)*lo(b).
func permute(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15 *uint64) {
	v0, v1, v2, v3 := *p0, *p1, *p2, *p3
	v4, v5, v6, v7 := *p4, *p5, *p6, *p7
	v8, v9, v10, v11 := *p8, *p9, *p10, *p11
	v12, v13, v14, v15 := *p12, *p13, *p14, *p15

	v0, v4, v8, v12 = mix(v0, v4, v8, v12)
	v1, v5, v9, v13 = mix(v1, v5, v9, v13)
	v2, v6, v10, v14 = mix(v2, v6, v10, v14)
	v3, v7, v11, v15 = mix(v3, v7, v11, v15)

	v0, v5, v10, v15 = mix(v0, v5, v10, v15)
	v1, v6, v11, v12 = mix(v1, v6, v11, v12)
	v2, v7, v8, v13 = mix(v2, v7, v8, v13)
	v3, v4, v9, v14 = mix(v3, v4, v9, v14)

	*p0, *p1, *p2, *p3 = v0, v1, v2, v3
	*p4, *p5, *p6, *p7 = v4, v5, v6, v7
	*p8, *p9, *p10, *p11 = v8, v9, v10, v11
	*p12, *p13, *p14, *p15 = v12, v13, v14, v15
}

// mix is BlaMka's GB.
func mix(a, b, c, d uint64) (uint64, uint64, uint64, uint64) {
	a += b + 2*uint64(uint32(a))*uint64(uint32(b))
	d = bits.RotateLeft64(d^a, -32)
	c += d + 2*uint64(uint32(c))*uint64(uint32(d))
	b = bits.RotateLeft64(b^c, -24)
	a += b + 2*uint64(uint32(a))*uint64(uint32(b))
	d = bits.RotateLeft64(d^a, -16)
	c += d + 2*uint64(uint32(c))*uint64(uint32(d))
	b = bits.RotateLeft64(b^c, -63)
	return a, b, c, d
}
