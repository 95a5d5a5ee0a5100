/* The fatbin's bytes, embedded in libtandem.a so the runtime needs no file at run time. */
	.section .rodata.tandem_fatbin, "a"
	.balign 64
	.globl tandem_fatbin_embedded
	.type tandem_fatbin_embedded, @object
tandem_fatbin_embedded:
	.incbin TANDEM_FATBIN_PATH
tandem_fatbin_embedded_end:
	.byte 0
	.balign 8
	.globl tandem_fatbin_embedded_size
	.type tandem_fatbin_embedded_size, @object
tandem_fatbin_embedded_size:
	.quad tandem_fatbin_embedded_end - tandem_fatbin_embedded
	.section .note.GNU-stack, "", @progbits
