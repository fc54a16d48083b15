#!/usr/bin/env bash
# The receiver-driven study (docs/receiver-driven.md): every preset and DCQCN, TIMELY and HPCC on the
# anatomy paper's 160-host leaf-spine with four workloads and the incast mix, the design-point
# ablations behind findings 1-5, the non-blocking and 10 Gbps fabrics, and the 8-flow convergence case.
# Results go to results/receiver/<case>/<algorithm>; scripts/receiver_tables.py turns them into tables.
#
#   scripts/receiver_study.sh [main|ablation|fabrics|converge|fairness|long|all]   (default all)
#   ONLY="tocc tocc_nounsched" scripts/receiver_study.sh main          (only these schemes)
set -euo pipefail
cd "$(dirname "$0")/.."
SLUICE=${SLUICE:-target/release/sluice}
OUT=results/receiver
TOKEN="expresspass ep_aeolus homa ndp tocc tocc_nounsched"
RCC="dcqcn timely hpcc"

# Token schemes run on a lossy shared buffer (the paper's buffer model); NDP and Aeolus keep their own
# small thresholds; Homa gets the paper's 35 MB buffer; sender-driven schemes run lossless with PFC.
run() { # case algorithm scenario extra-args...
    local case=$1 alg=$2 scenario=$3; shift 3
    RAN=false
    if [[ -n ${ONLY:-} && " $ONLY " != *" $alg "* ]]; then return 0; fi
    RAN=true
    local args=(--set cc.algorithm="$alg")
    case $alg in
        homa) args+=(--set switch.pfc.enabled=false --set switch.buffer=35MB) ;;
        expresspass|ep_aeolus|ndp|tocc|tocc_nounsched) args+=(--set switch.pfc.enabled=false) ;;
    esac
    rm -rf "$OUT/$case/$alg"
    "$SLUICE" run "$scenario" "${args[@]}" "$@" --out "$OUT/$case/$alg" > /dev/null
    echo "$case $alg done"
}

rename() { # case from to: keeps a variant's results under its own name (only when the run just ran)
    if $RAN && [[ -d $OUT/$1/$2 ]]; then rm -rf "$OUT/$1/$3"; mv "$OUT/$1/$2" "$OUT/$1/$3"; fi
}

main() {
    for wl in memcached webserver cache_follower websearch; do
        for alg in $TOKEN $RCC; do
            run "$wl" "$alg" scenarios/receiver/study160.toml --set workload.0.cdf=$wl \
                --set workload.0.duration="$(duration $wl 1)"
        done
    done
    for alg in $TOKEN $RCC; do
        run incast "$alg" scenarios/receiver/study160_incast.toml
    done
}

ablation() {
    # Finding 3: token rate limiters; finding 4: total volume control; finding 5: token CC.
    for wl in webserver cache_follower; do
        local s=scenarios/receiver/study160.toml w=(--set workload.0.cdf=$wl)
        run "ablation-$wl" tocc "$s" "${w[@]}"
        run "ablation-$wl" tocc_nounsched "$s" "${w[@]}"
        run "ablation-$wl" tocc "$s" "${w[@]}" --set cc.params.token_limiter=false \
            --set cc.params.token_cc=false --set cc.params.token_ecn=false \
            && rename "ablation-$wl" tocc tocc-no-limiter
        run "ablation-$wl" tocc "$s" "${w[@]}" --set cc.params.volume_control=false --set cc.params.volume_by_flag=false \
            && rename "ablation-$wl" tocc tocc-no-volume-control
        run "ablation-$wl" tocc "$s" "${w[@]}" --set cc.params.token_cc=false --set cc.params.token_ecn=false \
            && rename "ablation-$wl" tocc tocc-no-token-cc
        run "ablation-$wl" tocc "$s" "${w[@]}"
    done
}

fairness() {
    for alg in expresspass homa tocc_nounsched; do
        run fairness "$alg" scenarios/receiver/fairness8.toml
    done
}

# The workloads' arrival windows: short enough for 2 cores, long enough for hundreds of flows per host
# pair class. The 10 Gbps fabric gets ten times the 100 Gbps windows (memcached 100 us, web server and
# cache follower 2 ms, web search 10 ms) so that it sees about as many flows.
duration() { # workload scale
    local d
    case $1 in memcached) d=10 ;; websearch) d=1000 ;; *) d=200 ;; esac
    echo "$((d * $2))us"
}

# The incast mix at 10 Gbps: the same 16-to-1 incasts every 140 us instead of 14 us (0.2 load of a
# 10 Gbps fabric), for 2 ms of web server arrivals.
incast_10g() {
    local args=(--set topology.host_rate=10Gbps --set workload.0.duration=2ms)
    for i in 1 2 3 4 5 6 7 8 9 10; do args+=(--set "workload.$i.period=140us"); done
    echo "${args[@]}"
}

# Every scheme on the main table's four workloads: case "<prefix>-<workload>", arrival windows `scale`
# times the main table's, and any further arguments.
workloads() { # prefix scale extra-args...
    local prefix=$1 scale=$2; shift 2
    for wl in memcached webserver cache_follower websearch; do
        for alg in $TOKEN $RCC; do
            run "$prefix-$wl" "$alg" scenarios/receiver/study160.toml "$@" \
                --set workload.0.cdf=$wl --set workload.0.duration="$(duration $wl "$scale")"
        done
    done
}

fabrics() {
    # The non-blocking fabric (400 Gbps uplinks) and the 10 Gbps fabric, every workload and the incast mix.
    workloads nonblocking 1 --set topology.uplink_rate=400Gbps
    for alg in $TOKEN $RCC; do
        run nonblocking-incast "$alg" scenarios/receiver/study160_incast.toml --set topology.uplink_rate=400Gbps
    done
    workloads 10g 10 --set topology.host_rate=10Gbps
    for alg in $TOKEN $RCC; do
        # shellcheck disable=SC2046 # incast_10g prints whitespace-free arguments
        run 10g-incast "$alg" scenarios/receiver/study160_incast.toml $(incast_10g)
    done
}

converge() {
    run converge tocc scenarios/receiver/converge8.toml --set cc.params.token_cc=false --set cc.params.token_ecn=false
    run converge dcqcn scenarios/receiver/converge8.toml --set cc.params.variant=hpcc \
        && rename converge dcqcn dcqcn-hpcc
    run converge dcqcn scenarios/receiver/converge8.toml --set cc.params.variant=paper \
        && rename converge dcqcn dcqcn-paper
}

long() {
    # The main table's four workloads with five times the arrival windows (memcached 50 us, web server
    # and cache follower 1 ms, web search 5 ms) and two seeds: more large flows in every bucket, and
    # the spread between seeds shows which differences are noise.
    for seed in 1 2; do
        workloads "long-s$seed" 5 --seed "$seed"
    done
}

what=${1:-all}
case $what in
    main) main ;; ablation) ablation ;; fabrics) fabrics ;; converge) converge ;; fairness) fairness ;;
    long) long ;;
    all) main; ablation; converge; fairness; fabrics; long ;;
    *) echo "usage: $0 [main|ablation|fabrics|converge|fairness|long|all]" >&2; exit 2 ;;
esac
