# kernel_code_c.awk — the kernel code table (tools/sass_table.sh's TSV) as C rows for
# runtime/run/kernel_code.c; SOURCE names where the TSV came from.
BEGIN { printf "#define TANDEM_KERNEL_CODE_SOURCE \"%s\"\n#define TANDEM_KERNEL_CODE_ROWS \\\n", SOURCE }
/^#/ || NF < 18 { next }
{
    printf "    {%s, \"%s\", %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s.0, %s, %s, %s, %s}, \\\n",
           $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18
}
END { printf "\n" }
