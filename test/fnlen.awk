# fnlen.awk — the length of each top-level C function body, from the line with its opening
# brace to the line with its closing brace (the rule "no function in runtime/ over 80 lines").
#
#   awk -v MAX=80 -f test/fnlen.awk FILE...   prints "LINES FILE:LINE NAME" for each body over MAX
#   awk -v ALL=1  -f test/fnlen.awk FILE...   prints that line for every body
#
# Braces count only in code: not in comments (block comments may span lines), string or
# character literals (a literal may continue over a backslash-newline) or preprocessor lines
# (continuation lines included). A '{' at file scope opens a function body when the code before
# it, back to the last ';' or '}', ends in ')' and has no '=' outside parentheses (so struct
# bodies, initializers and compound literals are not functions). The name is the identifier
# before the declarator's parameter list, so multi-line signatures, attributes after the
# parameters and functions returning function pointers are named right. A file whose braces,
# comments or literals do not close prints "UNBALANCED FILE:LINE why": the measure of such a file
# cannot be trusted, and a check treats the line as a failure.

BEGIN { if (MAX == "") MAX = 80 }

function reset_file() {
    depth = 0; incomment = 0; inquote = ""; indirective = 0; acc = ""; start = 0; name = ""
}

# A file ended: its braces, comments and literals must all be closed.
function close_file(f, last) {
    if (f == "") return
    if (depth != 0) printf "UNBALANCED %s:%d %d brace(s) still open at the end\n", f, last, depth
    else if (incomment) printf "UNBALANCED %s:%d block comment not closed\n", f, last
    else if (inquote != "") printf "UNBALANCED %s:%d literal %s not closed\n", f, last, inquote
}

# The line's code: comments become a space, literals become an empty literal ("" or '').
# incomment and inquote carry over to the next line.
function strip(s,   out, i, n, c, j) {
    out = ""; n = length(s); i = 1
    while (i <= n) {
        if (incomment) {
            j = index(substr(s, i), "*/")
            if (!j) return out
            i += j + 1; incomment = 0; out = out " "
            continue
        }
        if (inquote != "") {
            while (i <= n) {
                c = substr(s, i, 1)
                if (c == "\\") { i += 2; continue }
                if (c == inquote) break
                i++
            }
            if (i > n) { # a literal left open: continued only after a backslash-newline
                if (substr(s, n, 1) != "\\") { out = out inquote; inquote = "" }
                return out
            }
            out = out inquote; inquote = ""; i++
            continue
        }
        c = substr(s, i, 1)
        if (c == "/" && substr(s, i + 1, 1) == "*") { incomment = 1; i += 2; continue }
        if (c == "/" && substr(s, i + 1, 1) == "/") return out
        if (c == "\"" || c == "'") { inquote = c; out = out c; i++; continue }
        out = out c; i++
    }
    return out
}

# Does code end in a parameter list with no '=' outside parentheses (a function declarator)?
function is_declarator(b,   k, c, d) {
    sub(/[ \t]+$/, "", b)
    if (b !~ /\)$/) return 0
    d = 0
    for (k = 1; k <= length(b); k++) {
        c = substr(b, k, 1)
        if (c == "(") d++
        else if (c == ")") d--
        else if (c == "=" && d == 0) return 0
    }
    return 1
}

# The function's name: the identifier before the parameter list that ends the declarator,
# skipping attributes written after it; "?" when there is none.
function fname(b,   k, d, c, id) {
    for (;;) {
        sub(/[ \t]+$/, "", b)
        if (b !~ /\)$/) return "?"
        d = 0
        for (k = length(b); k > 0; k--) {
            c = substr(b, k, 1)
            if (c == ")") d++
            else if (c == "(" && --d == 0) break
        }
        if (k == 0) return "?"
        id = substr(b, 1, k - 1)
        sub(/[ \t]+$/, "", id)
        if (id ~ /\)$/) { b = substr(id, 1, length(id) - 1); continue } # (*name(args))(params)
        if (!match(id, /[A-Za-z_][A-Za-z_0-9]*$/)) return "?"
        c = substr(id, RSTART)
        if (c == "__attribute__" || c == "__attribute" || c == "__declspec" || c == "__asm__" || c == "asm") {
            b = substr(id, 1, RSTART - 1)
            continue
        }
        return c
    }
}

FNR == 1 { close_file(file, lastline); reset_file(); file = FILENAME }
{
    lastline = FNR
    raw = $0
    sub(/\r$/, "", raw)
    code = strip(raw)
    if (indirective || code ~ /^[ \t]*#/) { # a directive, and its continuation lines
        indirective = raw ~ /\\$/
        if (!indirective) inquote = "" # "#error don't": a directive ends its literals
        next
    }
    for (i = 1; i <= length(code); i++) {
        c = substr(code, i, 1)
        if (c == "{") {
            if (depth == 0) {
                if (is_declarator(acc)) { start = FNR; name = fname(acc) }
                else start = 0
            }
            depth++
        } else if (c == "}") {
            depth--
            if (depth < 0) {
                printf "UNBALANCED %s:%d '}' without a matching '{'\n", FILENAME, FNR
                depth = 0
            }
            if (depth == 0) {
                if (start) {
                    n = FNR - start + 1
                    if (ALL || n > MAX) printf "%d %s:%d %s\n", n, FILENAME, start, name
                }
                start = 0; acc = ""
            }
        } else if (depth == 0) {
            if (c == ";") acc = ""
            else acc = acc c
        }
    }
    if (depth == 0) acc = acc " "
    if (length(acc) > 4000) acc = substr(acc, length(acc) - 2000)
}
END { close_file(file, lastline) }
