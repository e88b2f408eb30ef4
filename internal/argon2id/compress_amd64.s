//go:build amd64 && gc && !purego

#include "textflag.h"

// Byte shuffles that rotate each 64-bit word right by 24 and by 16.
DATA ·rot24<>+0x00(SB)/8, $0x0201000706050403
DATA ·rot24<>+0x08(SB)/8, $0x0a09080f0e0d0c0b
DATA ·rot24<>+0x10(SB)/8, $0x0201000706050403
DATA ·rot24<>+0x18(SB)/8, $0x0a09080f0e0d0c0b
GLOBL ·rot24<>(SB), (NOPTR+RODATA), $32

DATA ·rot16<>+0x00(SB)/8, $0x0100070605040302
DATA ·rot16<>+0x08(SB)/8, $0x09080f0e0d0c0b0a
DATA ·rot16<>+0x10(SB)/8, $0x0100070605040302
DATA ·rot16<>+0x18(SB)/8, $0x09080f0e0d0c0b0a
GLOBL ·rot16<>(SB), (NOPTR+RODATA), $32

// a += b + 2*lo32(a)*lo32(b), four words at a time, on two sets.
#define FMA2(a0, b0, a1, b1) \
	VPMULUDQ b0, a0, Y8 \
	VPMULUDQ b1, a1, Y9 \
	VPADDQ   b0, a0, a0 \
	VPADDQ   b1, a1, a1 \
	VPADDQ   Y8, Y8, Y8 \
	VPADDQ   Y9, Y9, Y9 \
	VPADDQ   Y8, a0, a0 \
	VPADDQ   Y9, a1, a1

// BlaMka's GB on the four lanes of (a0, b0, c0, d0) and of (a1, b1, c1, d1).
// Y10 and Y11 hold the rotations by 24 and 16; Y8 and Y9 are clobbered.
#define G2(a0, b0, c0, d0, a1, b1, c1, d1) \
	FMA2(a0, b0, a1, b1)        \
	VPXOR    a0, d0, d0         \
	VPXOR    a1, d1, d1         \
	VPSHUFD  $0xb1, d0, d0      \
	VPSHUFD  $0xb1, d1, d1      \
	FMA2(c0, d0, c1, d1)        \
	VPXOR    c0, b0, b0         \
	VPXOR    c1, b1, b1         \
	VPSHUFB  Y10, b0, b0        \
	VPSHUFB  Y10, b1, b1        \
	FMA2(a0, b0, a1, b1)        \
	VPXOR    a0, d0, d0         \
	VPXOR    a1, d1, d1         \
	VPSHUFB  Y11, d0, d0        \
	VPSHUFB  Y11, d1, d1        \
	FMA2(c0, d0, c1, d1)        \
	VPXOR    c0, b0, b0         \
	VPXOR    c1, b1, b1         \
	VPADDQ   b0, b0, Y8         \
	VPADDQ   b1, b1, Y9         \
	VPSRLQ   $63, b0, b0        \
	VPSRLQ   $63, b1, b1        \
	VPXOR    Y8, b0, b0         \
	VPXOR    Y9, b1, b1

// P on two rows of 16 words: Y0-Y3 and Y4-Y7, each row as (a, b, c, d).
#define ROWS \
	G2(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7) \
	VPERMQ $0x39, Y1, Y1 \
	VPERMQ $0x39, Y5, Y5 \
	VPERMQ $0x4e, Y2, Y2 \
	VPERMQ $0x4e, Y6, Y6 \
	VPERMQ $0x93, Y3, Y3 \
	VPERMQ $0x93, Y7, Y7 \
	G2(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7) \
	VPERMQ $0x93, Y1, Y1 \
	VPERMQ $0x93, Y5, Y5 \
	VPERMQ $0x4e, Y2, Y2 \
	VPERMQ $0x4e, Y6, Y6 \
	VPERMQ $0x39, Y3, Y3 \
	VPERMQ $0x39, Y7, Y7

// P on two columns of word pairs: Y0-Y7 hold the same 32 bytes of rows 0-7,
// whose low halves are one column and high halves the next. Words
// (v0 v1 | v2 v3) are Y0 | Y1, (v4 v5 | v6 v7) Y2 | Y3, and so on, so the
// column step works lane by lane, and the diagonal step needs v5 v6 | v7 v4
// and v15 v12 | v13 v14: blends and swaps within 128-bit lanes.
#define COLUMNS \
	G2(Y0, Y2, Y4, Y6, Y1, Y3, Y5, Y7) \
	VPBLENDD $0x33, Y3, Y2, Y8 \
	VPBLENDD $0x33, Y2, Y3, Y3 \
	VPSHUFD  $0x4e, Y8, Y2     \
	VPSHUFD  $0x4e, Y3, Y3     \
	VPBLENDD $0xcc, Y7, Y6, Y8 \
	VPBLENDD $0xcc, Y6, Y7, Y7 \
	VPSHUFD  $0x4e, Y8, Y6     \
	VPSHUFD  $0x4e, Y7, Y7     \
	G2(Y0, Y2, Y5, Y6, Y1, Y3, Y4, Y7) \
	VPBLENDD $0xcc, Y3, Y2, Y8 \
	VPBLENDD $0xcc, Y2, Y3, Y3 \
	VPSHUFD  $0x4e, Y8, Y2     \
	VPSHUFD  $0x4e, Y3, Y3     \
	VPBLENDD $0x33, Y7, Y6, Y8 \
	VPBLENDD $0x33, Y6, Y7, Y7 \
	VPSHUFD  $0x4e, Y8, Y6     \
	VPSHUFD  $0x4e, Y7, Y7

// Y(k) = prev ^ ref, 32 bytes at off.
#define LOADXOR(off, y) \
	VMOVDQU off(SI)(AX*1), y \
	VPXOR   off(DX)(AX*1), y, y

// func compressAVX2(out, prev, ref *block, scratch *[2]block, xor bool)
//
// R = prev ^ ref goes to scratch[0] (XORed with the old out when xor is
// set) and, through the row rounds, to scratch[1]; the column rounds read
// scratch[1] and store out = scratch[0] ^ P(R).
TEXT ·compressAVX2(SB), NOSPLIT, $0-33
	MOVQ    out+0(FP), DI
	MOVQ    prev+8(FP), SI
	MOVQ    ref+16(FP), DX
	MOVQ    scratch+24(FP), BX
	MOVBLZX xor+32(FP), CX
	VMOVDQU ·rot24<>(SB), Y10
	VMOVDQU ·rot16<>(SB), Y11

	XORQ AX, AX
rows:
	LOADXOR(0, Y0)
	LOADXOR(32, Y1)
	LOADXOR(64, Y2)
	LOADXOR(96, Y3)
	LOADXOR(128, Y4)
	LOADXOR(160, Y5)
	LOADXOR(192, Y6)
	LOADXOR(224, Y7)
	TESTL CX, CX
	JNZ   rowsxor
	VMOVDQU Y0, 0(BX)(AX*1)
	VMOVDQU Y1, 32(BX)(AX*1)
	VMOVDQU Y2, 64(BX)(AX*1)
	VMOVDQU Y3, 96(BX)(AX*1)
	VMOVDQU Y4, 128(BX)(AX*1)
	VMOVDQU Y5, 160(BX)(AX*1)
	VMOVDQU Y6, 192(BX)(AX*1)
	VMOVDQU Y7, 224(BX)(AX*1)
	JMP rowsround
rowsxor:
	VPXOR   0(DI)(AX*1), Y0, Y8
	VPXOR   32(DI)(AX*1), Y1, Y9
	VPXOR   64(DI)(AX*1), Y2, Y12
	VPXOR   96(DI)(AX*1), Y3, Y13
	VMOVDQU Y8, 0(BX)(AX*1)
	VMOVDQU Y9, 32(BX)(AX*1)
	VMOVDQU Y12, 64(BX)(AX*1)
	VMOVDQU Y13, 96(BX)(AX*1)
	VPXOR   128(DI)(AX*1), Y4, Y8
	VPXOR   160(DI)(AX*1), Y5, Y9
	VPXOR   192(DI)(AX*1), Y6, Y12
	VPXOR   224(DI)(AX*1), Y7, Y13
	VMOVDQU Y8, 128(BX)(AX*1)
	VMOVDQU Y9, 160(BX)(AX*1)
	VMOVDQU Y12, 192(BX)(AX*1)
	VMOVDQU Y13, 224(BX)(AX*1)
rowsround:
	ROWS
	VMOVDQU Y0, 1024(BX)(AX*1)
	VMOVDQU Y1, 1056(BX)(AX*1)
	VMOVDQU Y2, 1088(BX)(AX*1)
	VMOVDQU Y3, 1120(BX)(AX*1)
	VMOVDQU Y4, 1152(BX)(AX*1)
	VMOVDQU Y5, 1184(BX)(AX*1)
	VMOVDQU Y6, 1216(BX)(AX*1)
	VMOVDQU Y7, 1248(BX)(AX*1)
	ADDQ $256, AX
	CMPQ AX, $1024
	JB   rows

	XORQ AX, AX
columns:
	VMOVDQU 1024(BX)(AX*1), Y0
	VMOVDQU 1152(BX)(AX*1), Y1
	VMOVDQU 1280(BX)(AX*1), Y2
	VMOVDQU 1408(BX)(AX*1), Y3
	VMOVDQU 1536(BX)(AX*1), Y4
	VMOVDQU 1664(BX)(AX*1), Y5
	VMOVDQU 1792(BX)(AX*1), Y6
	VMOVDQU 1920(BX)(AX*1), Y7
	COLUMNS
	VPXOR   0(BX)(AX*1), Y0, Y0
	VPXOR   128(BX)(AX*1), Y1, Y1
	VPXOR   256(BX)(AX*1), Y2, Y2
	VPXOR   384(BX)(AX*1), Y3, Y3
	VPXOR   512(BX)(AX*1), Y4, Y4
	VPXOR   640(BX)(AX*1), Y5, Y5
	VPXOR   768(BX)(AX*1), Y6, Y6
	VPXOR   896(BX)(AX*1), Y7, Y7
	VMOVDQU Y0, 0(DI)(AX*1)
	VMOVDQU Y1, 128(DI)(AX*1)
	VMOVDQU Y2, 256(DI)(AX*1)
	VMOVDQU Y3, 384(DI)(AX*1)
	VMOVDQU Y4, 512(DI)(AX*1)
	VMOVDQU Y5, 640(DI)(AX*1)
	VMOVDQU Y6, 768(DI)(AX*1)
	VMOVDQU Y7, 896(DI)(AX*1)
	ADDQ $32, AX
	CMPQ AX, $128
	JB   columns

	VZEROUPPER
	RET

// The AVX-512 block function: the whole block in Z0-Z15, the rounds on all
// eight rows (then all eight columns) at once, rotations in one instruction.
// The block is loaded as C(r, h), the 64 bytes at 128r + 64h, into
// Z(r + 8h): the column layout, whose 256-bit halves are the 32 bytes of row
// r that COLUMNS takes, so the column step is COLUMNS's on each 256-bit
// half. Exchanging 256-bit halves between Z(2p + 8h) and Z(2p + 1 + 8h)
// gives the row layout, quarters 2h and 2h+1 of rows 2p and 2p+1, where the
// row step is ROWS's on each 256-bit half; the same exchange goes back.

#define PERM4(n, x0, x1, x2, x3) \
	VPERMQ $n, x0, x0 \
	VPERMQ $n, x1, x1 \
	VPERMQ $n, x2, x2 \
	VPERMQ $n, x3, x3

// a += b + 2*lo32(a)*lo32(b) on four sets; Z16-Z19 are clobbered.
#define ZFMA4(a0, b0, a1, b1, a2, b2, a3, b3) \
	VPMULUDQ b0, a0, Z16 \
	VPMULUDQ b1, a1, Z17 \
	VPMULUDQ b2, a2, Z18 \
	VPMULUDQ b3, a3, Z19 \
	VPADDQ   b0, a0, a0 \
	VPADDQ   b1, a1, a1 \
	VPADDQ   b2, a2, a2 \
	VPADDQ   b3, a3, a3 \
	VPADDQ   Z16, Z16, Z16 \
	VPADDQ   Z17, Z17, Z17 \
	VPADDQ   Z18, Z18, Z18 \
	VPADDQ   Z19, Z19, Z19 \
	VPADDQ   Z16, a0, a0 \
	VPADDQ   Z17, a1, a1 \
	VPADDQ   Z18, a2, a2 \
	VPADDQ   Z19, a3, a3

// x = (x ^ y) rotated right by n, on four sets.
#define ZXORROR4(n, x0, y0, x1, y1, x2, y2, x3, y3) \
	VPXORQ y0, x0, x0 \
	VPXORQ y1, x1, x1 \
	VPXORQ y2, x2, x2 \
	VPXORQ y3, x3, x3 \
	VPRORQ $n, x0, x0 \
	VPRORQ $n, x1, x1 \
	VPRORQ $n, x2, x2 \
	VPRORQ $n, x3, x3

// BlaMka's GB on the lanes of four sets.
#define ZG4(a0, b0, c0, d0, a1, b1, c1, d1, a2, b2, c2, d2, a3, b3, c3, d3) \
	ZFMA4(a0, b0, a1, b1, a2, b2, a3, b3) \
	ZXORROR4(32, d0, a0, d1, a1, d2, a2, d3, a3) \
	ZFMA4(c0, d0, c1, d1, c2, d2, c3, d3) \
	ZXORROR4(24, b0, c0, b1, c1, b2, c2, b3, c3) \
	ZFMA4(a0, b0, a1, b1, a2, b2, a3, b3) \
	ZXORROR4(16, d0, a0, d1, a1, d2, a2, d3, a3) \
	ZFMA4(c0, d0, c1, d1, c2, d2, c3, d3) \
	ZXORROR4(63, b0, c0, b1, c1, b2, c2, b3, c3)

// Exchange the high 256 bits of x with the low 256 bits of y.
#define ZXCHG(x, y) \
	VSHUFI64X2 $0x44, y, x, Z16 \
	VSHUFI64X2 $0xee, y, x, y \
	VMOVDQA64  Z16, x

#define ZLAYOUT \
	ZXCHG(Z0, Z1) \
	ZXCHG(Z2, Z3) \
	ZXCHG(Z4, Z5) \
	ZXCHG(Z6, Z7) \
	ZXCHG(Z8, Z9) \
	ZXCHG(Z10, Z11) \
	ZXCHG(Z12, Z13) \
	ZXCHG(Z14, Z15)

// In the row layout, rows 2p and 2p+1 are a = Z(2p), b = Z(2p+1),
// c = Z(2p+8), d = Z(2p+9).
#define ZROWS \
	ZG4(Z0, Z1, Z8, Z9, Z2, Z3, Z10, Z11, Z4, Z5, Z12, Z13, Z6, Z7, Z14, Z15) \
	PERM4(0x39, Z1, Z3, Z5, Z7) \
	PERM4(0x4e, Z8, Z10, Z12, Z14) \
	PERM4(0x93, Z9, Z11, Z13, Z15) \
	ZG4(Z0, Z1, Z8, Z9, Z2, Z3, Z10, Z11, Z4, Z5, Z12, Z13, Z6, Z7, Z14, Z15) \
	PERM4(0x93, Z1, Z3, Z5, Z7) \
	PERM4(0x4e, Z8, Z10, Z12, Z14) \
	PERM4(0x39, Z9, Z11, Z13, Z15)

// (x, y) becomes (x1 y0, y1 x0) in each 128-bit lane (ZSWAB), or
// (y1 x0, x1 y0) (ZSWBA): the diagonal step's rearrangement of COLUMNS,
// one VSHUFPD each.
#define ZSWAB(x, y) \
	VSHUFPD   $0x55, y, x, Z16 \
	VSHUFPD   $0x55, x, y, y   \
	VMOVDQA64 Z16, x

#define ZSWBA(x, y) \
	VSHUFPD   $0x55, x, y, Z16 \
	VSHUFPD   $0x55, y, x, y   \
	VMOVDQA64 Z16, x

// In the column layout, as in COLUMNS with Z(r) and Z(r+8) for row r.
#define ZCOLUMNS \
	ZG4(Z0, Z2, Z4, Z6, Z1, Z3, Z5, Z7, Z8, Z10, Z12, Z14, Z9, Z11, Z13, Z15) \
	ZSWAB(Z2, Z3) \
	ZSWBA(Z6, Z7) \
	ZSWAB(Z10, Z11) \
	ZSWBA(Z14, Z15) \
	ZG4(Z0, Z2, Z5, Z6, Z1, Z3, Z4, Z7, Z8, Z10, Z13, Z14, Z9, Z11, Z12, Z15) \
	ZSWBA(Z2, Z3) \
	ZSWAB(Z6, Z7) \
	ZSWBA(Z10, Z11) \
	ZSWAB(Z14, Z15)

// Load prev ^ ref; save R (XORed with the old out, with xor) to scratch;
// store out = R ^ P(R).
#define ZLOAD(r, h, z) \
	VMOVDQU64 (128*r+64*h)(SI), z \
	VPXORQ    (128*r+64*h)(DX), z, z

#define ZSAVE(r, h, z) \
	VMOVDQU64 z, (128*r+64*h)(BX)

#define ZSAVEXOR(r, h, z) \
	VPXORQ    (128*r+64*h)(DI), z, Z16 \
	VMOVDQU64 Z16, (128*r+64*h)(BX)

#define ZSTORE(r, h, z) \
	VPXORQ    (128*r+64*h)(BX), z, z \
	VMOVDQU64 z, (128*r+64*h)(DI)

// func compressAVX512(out, prev, ref *block, scratch *[2]block, xor bool)
TEXT ·compressAVX512(SB), NOSPLIT, $0-33
	MOVQ    out+0(FP), DI
	MOVQ    prev+8(FP), SI
	MOVQ    ref+16(FP), DX
	MOVQ    scratch+24(FP), BX
	MOVBLZX xor+32(FP), CX

	ZLOAD(0, 0, Z0)
	ZLOAD(1, 0, Z1)
	ZLOAD(2, 0, Z2)
	ZLOAD(3, 0, Z3)
	ZLOAD(4, 0, Z4)
	ZLOAD(5, 0, Z5)
	ZLOAD(6, 0, Z6)
	ZLOAD(7, 0, Z7)
	ZLOAD(0, 1, Z8)
	ZLOAD(1, 1, Z9)
	ZLOAD(2, 1, Z10)
	ZLOAD(3, 1, Z11)
	ZLOAD(4, 1, Z12)
	ZLOAD(5, 1, Z13)
	ZLOAD(6, 1, Z14)
	ZLOAD(7, 1, Z15)
	TESTL CX, CX
	JNZ   zsavexor
	ZSAVE(0, 0, Z0)
	ZSAVE(1, 0, Z1)
	ZSAVE(2, 0, Z2)
	ZSAVE(3, 0, Z3)
	ZSAVE(4, 0, Z4)
	ZSAVE(5, 0, Z5)
	ZSAVE(6, 0, Z6)
	ZSAVE(7, 0, Z7)
	ZSAVE(0, 1, Z8)
	ZSAVE(1, 1, Z9)
	ZSAVE(2, 1, Z10)
	ZSAVE(3, 1, Z11)
	ZSAVE(4, 1, Z12)
	ZSAVE(5, 1, Z13)
	ZSAVE(6, 1, Z14)
	ZSAVE(7, 1, Z15)
	JMP zround
zsavexor:
	ZSAVEXOR(0, 0, Z0)
	ZSAVEXOR(1, 0, Z1)
	ZSAVEXOR(2, 0, Z2)
	ZSAVEXOR(3, 0, Z3)
	ZSAVEXOR(4, 0, Z4)
	ZSAVEXOR(5, 0, Z5)
	ZSAVEXOR(6, 0, Z6)
	ZSAVEXOR(7, 0, Z7)
	ZSAVEXOR(0, 1, Z8)
	ZSAVEXOR(1, 1, Z9)
	ZSAVEXOR(2, 1, Z10)
	ZSAVEXOR(3, 1, Z11)
	ZSAVEXOR(4, 1, Z12)
	ZSAVEXOR(5, 1, Z13)
	ZSAVEXOR(6, 1, Z14)
	ZSAVEXOR(7, 1, Z15)
zround:
	ZLAYOUT
	ZROWS
	ZLAYOUT
	ZCOLUMNS
	ZSTORE(0, 0, Z0)
	ZSTORE(1, 0, Z1)
	ZSTORE(2, 0, Z2)
	ZSTORE(3, 0, Z3)
	ZSTORE(4, 0, Z4)
	ZSTORE(5, 0, Z5)
	ZSTORE(6, 0, Z6)
	ZSTORE(7, 0, Z7)
	ZSTORE(0, 1, Z8)
	ZSTORE(1, 1, Z9)
	ZSTORE(2, 1, Z10)
	ZSTORE(3, 1, Z11)
	ZSTORE(4, 1, Z12)
	ZSTORE(5, 1, Z13)
	ZSTORE(6, 1, Z14)
	ZSTORE(7, 1, Z15)
	VZEROUPPER
	RET
