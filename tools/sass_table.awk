# sass_table.awk — one row per kernel of `cuobjdump -sass -arch sm_XX` output (runtime/run/kernel_code.h):
# the kernel's innermost loops (backward branches enclosing no other) are its steady state; the row
# counts their instructions and what one pass of them does per warp. Run by tools/sass_table.sh.
function flush(   i, j, inner, n, a, op) {
    if (name == "") return
    for (i = 0; i < nl; i++) {            # a loop is innermost when no other loop lies inside it
        inner = 1
        for (j = 0; j < nl; j++)
            if (j != i && lo[j] >= lo[i] && hi[j] <= hi[i] && (lo[j] != lo[i] || hi[j] != hi[i])) inner = 0
        isin[i] = inner
    }
    n = 0; body = 0; ldg = 0; stg = 0; lds = 0; sts = 0; ldsm = 0; hmma = 0; ffma = 0; fadd = 0; mufu = 0; bar = 0
    for (k = 0; k < ni; k++) {
        a = addr[k]; op = opc[k]
        if (op == "NOP") continue
        n++
        inloop = nl == 0
        for (i = 0; i < nl; i++) if (isin[i] && a >= lo[i] && a <= hi[i]) inloop = 1
        if (!inloop) continue
        body++
        if (op ~ /^LDG/) ldg += width(op)
        else if (op ~ /^STG/) stg += width(op)
        else if (op ~ /^LDSM/) ldsm++
        else if (op ~ /^LDS/) lds++
        else if (op ~ /^STS/) sts++
        else if (op ~ /^HMMA\.16816/) hmma += 4096
        else if (op ~ /^HMMA\.1688/) hmma += 2048
        else if (op ~ /^FFMA/) ffma++
        else if (op ~ /^(FADD|FMUL)/) fadd++
        else if (op ~ /^MUFU/) mufu++
        else if (op ~ /^BAR/) bar++
    }
    loops = 0
    for (i = 0; i < nl; i++) loops += isin[i]
    key = arch " " name
    printf "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", arch, substr(name, 10),
           key in res ? res[key] : "0\t0\t0", n, body, loops, ldg, stg, lds, sts, ldsm, hmma, ffma, fadd, mufu, bar
    name = ""
}
# bytes per lane of a global load or store from its width suffix (32-bit when none)
function width(op) {
    if (op ~ /\.128/) return 16
    if (op ~ /\.64/) return 8
    if (op ~ /\.(U|S)16/) return 2
    if (op ~ /\.(U|S)8/) return 1
    return 4
}
# hexadecimal digits to a number (mawk has no strtonum)
function hex(s,   i, v) {
    sub(/^0x/, "", s)
    v = 0
    for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
    return v
}
# RES: `cuobjdump -res-usage` of the same fatbin, "Function <name>:" then "REG:n STACK:n SHARED:n ..."
BEGIN {
    while ((getline l < RES) > 0) {
        if (l ~ /^arch = sm_/) { ra = l; sub(/.*sm_/, "", ra) }
        if (l ~ /Function /) { fn = l; sub(/.*Function /, "", fn); sub(/:.*/, "", fn) }
        if (l ~ /REG:/) {
            r = l; sub(/.*REG:/, "", r); sub(/ .*/, "", r)
            st = l; sub(/.*STACK:/, "", st); sub(/ .*/, "", st)
            sh = l; sub(/.*SHARED:/, "", sh); sub(/ .*/, "", sh)
            res[ra " " fn] = r "\t" sh "\t" st
        }
    }
}
/code for sm_/ { flush(); arch = $NF; sub(/^sm_/, "", arch) }
/Function :/ { flush(); name = $NF; ni = 0; nl = 0; next }
name != "" && /^ *\/\*[0-9a-f]+\*\// {
    line = $0
    sub(/ *;.*/, "", line)
    m = split(line, f, /[ \t]+/)
    j = 1; while (f[j] == "") j++
    a = f[j]; gsub(/[\/*]/, "", a); a = hex(a)
    j++
    if (f[j] ~ /^@/) j++
    op = f[j]
    addr[ni] = a; opc[ni] = op; ni++
    if (op ~ /^BRA/ && f[m] ~ /^0x/) {
        t = hex(f[m])
        if (t < a) { lo[nl] = t; hi[nl] = a; nl++ }
    }
}
END { flush() }
