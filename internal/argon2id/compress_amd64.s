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

// func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL subleaf+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv() (eax, edx uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET

// The AVX-512 block function: the same steps on 256-bit vectors, with
// AVX512VL's rotations and its sixteen more registers, which let four rows
// (or four columns) go through the rounds at once instead of two.

// a += b + 2*lo32(a)*lo32(b) on four sets; Y16-Y19 are clobbered.
#define FMA4(a0, b0, a1, b1, a2, b2, a3, b3) \
	VPMULUDQ b0, a0, Y16 \
	VPMULUDQ b1, a1, Y17 \
	VPMULUDQ b2, a2, Y18 \
	VPMULUDQ b3, a3, Y19 \
	VPADDQ   b0, a0, a0 \
	VPADDQ   b1, a1, a1 \
	VPADDQ   b2, a2, a2 \
	VPADDQ   b3, a3, a3 \
	VPADDQ   Y16, Y16, Y16 \
	VPADDQ   Y17, Y17, Y17 \
	VPADDQ   Y18, Y18, Y18 \
	VPADDQ   Y19, Y19, Y19 \
	VPADDQ   Y16, a0, a0 \
	VPADDQ   Y17, a1, a1 \
	VPADDQ   Y18, a2, a2 \
	VPADDQ   Y19, a3, a3

// x = (x ^ y) rotated right by n, on four sets.
#define XORROR4(n, x0, y0, x1, y1, x2, y2, x3, y3) \
	VPXOR  y0, x0, x0 \
	VPXOR  y1, x1, x1 \
	VPXOR  y2, x2, x2 \
	VPXOR  y3, x3, x3 \
	VPRORQ $n, x0, x0 \
	VPRORQ $n, x1, x1 \
	VPRORQ $n, x2, x2 \
	VPRORQ $n, x3, x3

#define G4(a0, b0, c0, d0, a1, b1, c1, d1, a2, b2, c2, d2, a3, b3, c3, d3) \
	FMA4(a0, b0, a1, b1, a2, b2, a3, b3) \
	XORROR4(32, d0, a0, d1, a1, d2, a2, d3, a3) \
	FMA4(c0, d0, c1, d1, c2, d2, c3, d3) \
	XORROR4(24, b0, c0, b1, c1, b2, c2, b3, c3) \
	FMA4(a0, b0, a1, b1, a2, b2, a3, b3) \
	XORROR4(16, d0, a0, d1, a1, d2, a2, d3, a3) \
	FMA4(c0, d0, c1, d1, c2, d2, c3, d3) \
	XORROR4(63, b0, c0, b1, c1, b2, c2, b3, c3)

#define PERM3(n, x0, x1, x2, x3) \
	VPERMQ $n, x0, x0 \
	VPERMQ $n, x1, x1 \
	VPERMQ $n, x2, x2 \
	VPERMQ $n, x3, x3

// P on four rows: Y0-Y3, Y4-Y7, Y8-Y11, Y12-Y15.
#define ROWS4 \
	G4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15) \
	PERM3(0x39, Y1, Y5, Y9, Y13) \
	PERM3(0x4e, Y2, Y6, Y10, Y14) \
	PERM3(0x93, Y3, Y7, Y11, Y15) \
	G4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15) \
	PERM3(0x93, Y1, Y5, Y9, Y13) \
	PERM3(0x4e, Y2, Y6, Y10, Y14) \
	PERM3(0x39, Y3, Y7, Y11, Y15)

// (x, y) becomes (x1 y0, y1 x0) in each 128-bit lane (SWAB), or
// (y1 x0, x1 y0) (SWBA): one VSHUFPD each, where COLUMNS blends and swaps.
#define SWAB(x, y) \
	VSHUFPD   $5, y, x, Y16 \
	VSHUFPD   $5, x, y, y   \
	VMOVDQA64 Y16, x

#define SWBA(x, y) \
	VSHUFPD   $5, x, y, Y16 \
	VSHUFPD   $5, y, x, y   \
	VMOVDQA64 Y16, x

// P on four columns: Y0-Y7 and Y8-Y15 as in COLUMNS.
#define COLUMNS4 \
	G4(Y0, Y2, Y4, Y6, Y1, Y3, Y5, Y7, Y8, Y10, Y12, Y14, Y9, Y11, Y13, Y15) \
	SWAB(Y2, Y3) \
	SWBA(Y6, Y7) \
	SWAB(Y10, Y11) \
	SWBA(Y14, Y15) \
	G4(Y0, Y2, Y5, Y6, Y1, Y3, Y4, Y7, Y8, Y10, Y13, Y14, Y9, Y11, Y12, Y15) \
	SWBA(Y2, Y3) \
	SWAB(Y6, Y7) \
	SWBA(Y10, Y11) \
	SWAB(Y14, Y15)

// func compressAVX512(out, prev, ref *block, scratch *[2]block, xor bool)
TEXT ·compressAVX512(SB), NOSPLIT, $0-33
	MOVQ    out+0(FP), DI
	MOVQ    prev+8(FP), SI
	MOVQ    ref+16(FP), DX
	MOVQ    scratch+24(FP), BX
	MOVBLZX xor+32(FP), CX

	XORQ AX, AX
rows4:
	LOADXOR(0, Y0)
	LOADXOR(32, Y1)
	LOADXOR(64, Y2)
	LOADXOR(96, Y3)
	LOADXOR(128, Y4)
	LOADXOR(160, Y5)
	LOADXOR(192, Y6)
	LOADXOR(224, Y7)
	LOADXOR(256, Y8)
	LOADXOR(288, Y9)
	LOADXOR(320, Y10)
	LOADXOR(352, Y11)
	LOADXOR(384, Y12)
	LOADXOR(416, Y13)
	LOADXOR(448, Y14)
	LOADXOR(480, Y15)
	TESTL CX, CX
	JNZ   rows4xor
	VMOVDQU Y0, 0(BX)(AX*1)
	VMOVDQU Y1, 32(BX)(AX*1)
	VMOVDQU Y2, 64(BX)(AX*1)
	VMOVDQU Y3, 96(BX)(AX*1)
	VMOVDQU Y4, 128(BX)(AX*1)
	VMOVDQU Y5, 160(BX)(AX*1)
	VMOVDQU Y6, 192(BX)(AX*1)
	VMOVDQU Y7, 224(BX)(AX*1)
	VMOVDQU Y8, 256(BX)(AX*1)
	VMOVDQU Y9, 288(BX)(AX*1)
	VMOVDQU Y10, 320(BX)(AX*1)
	VMOVDQU Y11, 352(BX)(AX*1)
	VMOVDQU Y12, 384(BX)(AX*1)
	VMOVDQU Y13, 416(BX)(AX*1)
	VMOVDQU Y14, 448(BX)(AX*1)
	VMOVDQU Y15, 480(BX)(AX*1)
	JMP rows4round
rows4xor:
	VPXORQ    0(DI)(AX*1), Y0, Y16
	VPXORQ    32(DI)(AX*1), Y1, Y17
	VPXORQ    64(DI)(AX*1), Y2, Y18
	VPXORQ    96(DI)(AX*1), Y3, Y19
	VPXORQ    128(DI)(AX*1), Y4, Y20
	VPXORQ    160(DI)(AX*1), Y5, Y21
	VPXORQ    192(DI)(AX*1), Y6, Y22
	VPXORQ    224(DI)(AX*1), Y7, Y23
	VMOVDQU64 Y16, 0(BX)(AX*1)
	VMOVDQU64 Y17, 32(BX)(AX*1)
	VMOVDQU64 Y18, 64(BX)(AX*1)
	VMOVDQU64 Y19, 96(BX)(AX*1)
	VMOVDQU64 Y20, 128(BX)(AX*1)
	VMOVDQU64 Y21, 160(BX)(AX*1)
	VMOVDQU64 Y22, 192(BX)(AX*1)
	VMOVDQU64 Y23, 224(BX)(AX*1)
	VPXORQ    256(DI)(AX*1), Y8, Y16
	VPXORQ    288(DI)(AX*1), Y9, Y17
	VPXORQ    320(DI)(AX*1), Y10, Y18
	VPXORQ    352(DI)(AX*1), Y11, Y19
	VPXORQ    384(DI)(AX*1), Y12, Y20
	VPXORQ    416(DI)(AX*1), Y13, Y21
	VPXORQ    448(DI)(AX*1), Y14, Y22
	VPXORQ    480(DI)(AX*1), Y15, Y23
	VMOVDQU64 Y16, 256(BX)(AX*1)
	VMOVDQU64 Y17, 288(BX)(AX*1)
	VMOVDQU64 Y18, 320(BX)(AX*1)
	VMOVDQU64 Y19, 352(BX)(AX*1)
	VMOVDQU64 Y20, 384(BX)(AX*1)
	VMOVDQU64 Y21, 416(BX)(AX*1)
	VMOVDQU64 Y22, 448(BX)(AX*1)
	VMOVDQU64 Y23, 480(BX)(AX*1)
rows4round:
	ROWS4
	VMOVDQU Y0, 1024(BX)(AX*1)
	VMOVDQU Y1, 1056(BX)(AX*1)
	VMOVDQU Y2, 1088(BX)(AX*1)
	VMOVDQU Y3, 1120(BX)(AX*1)
	VMOVDQU Y4, 1152(BX)(AX*1)
	VMOVDQU Y5, 1184(BX)(AX*1)
	VMOVDQU Y6, 1216(BX)(AX*1)
	VMOVDQU Y7, 1248(BX)(AX*1)
	VMOVDQU Y8, 1280(BX)(AX*1)
	VMOVDQU Y9, 1312(BX)(AX*1)
	VMOVDQU Y10, 1344(BX)(AX*1)
	VMOVDQU Y11, 1376(BX)(AX*1)
	VMOVDQU Y12, 1408(BX)(AX*1)
	VMOVDQU Y13, 1440(BX)(AX*1)
	VMOVDQU Y14, 1472(BX)(AX*1)
	VMOVDQU Y15, 1504(BX)(AX*1)
	ADDQ $512, AX
	CMPQ AX, $1024
	JB   rows4

	XORQ AX, AX
columns4:
	VMOVDQU 1024(BX)(AX*1), Y0
	VMOVDQU 1152(BX)(AX*1), Y1
	VMOVDQU 1280(BX)(AX*1), Y2
	VMOVDQU 1408(BX)(AX*1), Y3
	VMOVDQU 1536(BX)(AX*1), Y4
	VMOVDQU 1664(BX)(AX*1), Y5
	VMOVDQU 1792(BX)(AX*1), Y6
	VMOVDQU 1920(BX)(AX*1), Y7
	VMOVDQU 1056(BX)(AX*1), Y8
	VMOVDQU 1184(BX)(AX*1), Y9
	VMOVDQU 1312(BX)(AX*1), Y10
	VMOVDQU 1440(BX)(AX*1), Y11
	VMOVDQU 1568(BX)(AX*1), Y12
	VMOVDQU 1696(BX)(AX*1), Y13
	VMOVDQU 1824(BX)(AX*1), Y14
	VMOVDQU 1952(BX)(AX*1), Y15
	COLUMNS4
	VPXOR   0(BX)(AX*1), Y0, Y0
	VPXOR   128(BX)(AX*1), Y1, Y1
	VPXOR   256(BX)(AX*1), Y2, Y2
	VPXOR   384(BX)(AX*1), Y3, Y3
	VPXOR   512(BX)(AX*1), Y4, Y4
	VPXOR   640(BX)(AX*1), Y5, Y5
	VPXOR   768(BX)(AX*1), Y6, Y6
	VPXOR   896(BX)(AX*1), Y7, Y7
	VPXOR   32(BX)(AX*1), Y8, Y8
	VPXOR   160(BX)(AX*1), Y9, Y9
	VPXOR   288(BX)(AX*1), Y10, Y10
	VPXOR   416(BX)(AX*1), Y11, Y11
	VPXOR   544(BX)(AX*1), Y12, Y12
	VPXOR   672(BX)(AX*1), Y13, Y13
	VPXOR   800(BX)(AX*1), Y14, Y14
	VPXOR   928(BX)(AX*1), Y15, Y15
	VMOVDQU Y0, 0(DI)(AX*1)
	VMOVDQU Y1, 128(DI)(AX*1)
	VMOVDQU Y2, 256(DI)(AX*1)
	VMOVDQU Y3, 384(DI)(AX*1)
	VMOVDQU Y4, 512(DI)(AX*1)
	VMOVDQU Y5, 640(DI)(AX*1)
	VMOVDQU Y6, 768(DI)(AX*1)
	VMOVDQU Y7, 896(DI)(AX*1)
	VMOVDQU Y8, 32(DI)(AX*1)
	VMOVDQU Y9, 160(DI)(AX*1)
	VMOVDQU Y10, 288(DI)(AX*1)
	VMOVDQU Y11, 416(DI)(AX*1)
	VMOVDQU Y12, 544(DI)(AX*1)
	VMOVDQU Y13, 672(DI)(AX*1)
	VMOVDQU Y14, 800(DI)(AX*1)
	VMOVDQU Y15, 928(DI)(AX*1)
	ADDQ $64, AX
	CMPQ AX, $128
	JB   columns4

	VZEROUPPER
	RET
