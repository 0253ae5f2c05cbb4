#include "textflag.h"

// func fold256(state *[256]byte, p []byte, k *[2]uint64) uint32
TEXT ·fold256(SB), NOSPLIT, $0-44
	MOVQ state+0(FP), DI
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ k+32(FP), AX

	VMOVDQU64 0(DI), Z0
	VMOVDQU64 64(DI), Z1
	VMOVDQU64 128(DI), Z2
	VMOVDQU64 192(DI), Z3
	VBROADCASTI32X4 (AX), Z4

	TESTQ CX, CX
	JZ    done

loop:
	// Z(i) = lo(Z(i))·k_lo XOR hi(Z(i))·k_hi XOR the next 64 bytes.
	VPCLMULQDQ $0x00, Z4, Z0, Z5
	VPCLMULQDQ $0x11, Z4, Z0, Z0
	VPTERNLOGD $0x96, 0(SI), Z5, Z0
	VPCLMULQDQ $0x00, Z4, Z1, Z6
	VPCLMULQDQ $0x11, Z4, Z1, Z1
	VPTERNLOGD $0x96, 64(SI), Z6, Z1
	VPCLMULQDQ $0x00, Z4, Z2, Z7
	VPCLMULQDQ $0x11, Z4, Z2, Z2
	VPTERNLOGD $0x96, 128(SI), Z7, Z2
	VPCLMULQDQ $0x00, Z4, Z3, Z8
	VPCLMULQDQ $0x11, Z4, Z3, Z3
	VPTERNLOGD $0x96, 192(SI), Z8, Z3
	ADDQ $256, SI
	SUBQ $256, CX
	JNZ  loop

done:
	VMOVDQU64 Z0, 0(DI)
	VMOVDQU64 Z1, 64(DI)
	VMOVDQU64 Z2, 128(DI)
	VMOVDQU64 Z3, 192(DI)
	VZEROUPPER

	// The CRC of the folded block from a zero register, 8 bytes at a time.
	XORL AX, AX
	MOVQ $32, CX

crc:
	CRC32Q (DI), AX
	ADDQ   $8, DI
	DECQ   CX
	JNZ    crc
	MOVL   AX, ret+40(FP)
	RET
