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
