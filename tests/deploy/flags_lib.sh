# Helpers shared by the deploy tests (sourced, not run).

# Prints the long flags a binary's --help lists, one a line, sorted.
help_flags() {
  local binary=$1 out
  out=$("$binary" --help 2>&1) || { echo "$binary --help failed: $out" >&2; return 1; }
  grep -oE -- '--[a-z0-9][a-z0-9-]*' <<<"$out" | sort -u
}

# check_flags BINARY WHERE < text: every --flag in the text on stdin must be
# one BINARY's --help lists. WHERE names the source in messages. Returns the
# number of unknown flags (0: all known); prints each unknown one.
check_flags() {
  local binary=$1 where=$2 known used flag bad=0
  known=$(help_flags "$binary") || return 1
  used=$(grep -oE -- '--[a-z0-9][a-z0-9-]*' | sort -u || true)
  if [[ -z "$used" ]]; then
    echo "FAIL $where: no flags found for $(basename "$binary") (parsing broke?)" >&2
    return 1
  fi
  for flag in $used; do
    if ! grep -qxF -- "$flag" <<<"$known"; then
      echo "FAIL $where: $flag is not a flag of $(basename "$binary") (--help)" >&2
      bad=$((bad + 1))
    fi
  done
  ((bad == 0)) && echo "ok   $where: $(wc -w <<<"$used") flags known to $(basename "$binary")"
  return "$bad"
}
