# Progress lines of scripts/bootstrap.sh (sourced): which step, how far, how long it took.
# Installing takes minutes on a fresh machine; these lines go to stderr so that nobody waits
# in front of a silent terminal wondering whether it hangs.

BOOTSTRAP_STEPS=${BOOTSTRAP_STEPS:-10}
_step_started=$SECONDS

# step K "what": announce step K of BOOTSTRAP_STEPS
step() {
    _step_started=$SECONDS
    echo "bootstrap [$1/$BOOTSTRAP_STEPS] $2" >&2
}

# step_done: how long the step took
step_done() {
    echo "bootstrap       done in $((SECONDS - _step_started)) s" >&2
}

# pip_progress LOG: read pip's output on stdin, keep all of it in LOG, and say how far it is:
# the first and every tenth package resolved, then how many it installs.
pip_progress() {
    local log="$1" collected=0 line name count
    while IFS= read -r line; do
        printf '%s\n' "$line" >>"$log"
        case "$line" in
        Collecting\ *)
            collected=$((collected + 1))
            name="${line#Collecting }"
            name="${name%% *}"
            if [ "$collected" -eq 1 ] || [ $((collected % 10)) -eq 0 ]; then
                echo "bootstrap       resolving: $collected packages so far ($name)" >&2
            fi
            ;;
        Installing\ collected\ packages:*)
            count=$(printf '%s' "${line#*:}" | tr ',' '\n' | grep -c .)
            echo "bootstrap       installing $count packages into .venv (the longest part)" >&2
            ;;
        Successfully\ installed*)
            echo "bootstrap       installed" >&2
            ;;
        esac
    done
}
