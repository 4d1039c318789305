#!/usr/bin/env python3
"""Shows that the fuzzer can fail: each mutant is bpfnet's datapath with one deliberate bug (a missing bounds
check, a swapped port, a broken checksum update, a trust-model rule dropped), built from a copy of the sources
and run through bpfnet-fuzz. Every mutant must load (the verifier cannot see these bugs) and the fuzzer must
report violations for it; a mutant that survives fails this test.

usage: mutants.py --fuzz BIN --source DIR --clang CLANG --include DIR [--frames N] [--seed S] [--only NAME]
                  [--jobs N]

--jobs: mutants built and run at once (each in a directory of its own); a mutant's time is mostly its compile
(clang at -O2: about 6.5 s of its 8 on the build machine, 2026-12-07), one core each.
"""
import argparse
import concurrent.futures
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

# The fuzzer runs the mutant with the kernel's checksum helpers (BPFNET_TEST_L4_CHECKSUMS=helper).
HELPER = "helper"

# (name, file under bpf/, the original text, the mutant's text[, HELPER]). Each original must occur exactly
# once.
MUTANTS = [
    ("bounds: IPv4 total length not checked against the frame", "lib/parse.h",
     "ip_len < ihl_bytes || ip_len > frame_ip_bytes)",
     "ip_len < ihl_bytes)"),
    ("bounds: UDP length not checked against the IP packet", "lib/parse.h",
     "if (udp_len < sizeof(*udp) || udp_len > ip_len - ihl_bytes)",
     "if (udp_len < sizeof(*udp))"),
    ("bounds: BOOTP message shorter than its fixed header read anyway", "lib/dhcp.h",
     "if (pkt->l4_end < off + BOOTP_OPTIONS)\n\t\treturn -1;",
     "if (pkt->l4_end < off + 4)\n\t\treturn -1;"),
    ("bounds: the DHCP option walk reads past the end of an area", "lib/dhcp.h",
     "if (pos >= w->end || pos >= DHCP_SCAN) {",
     "if (pos >= DHCP_SCAN) {"),
    ("swapped port: the DNAT writes the source port", "lib/nat.h",
     "return pkt->l4_off + (side == NAT_SOURCE ? 0 : sizeof(__be16));",
     "return pkt->l4_off + (side == NAT_SOURCE ? sizeof(__be16) : 0);"),
    ("swapped port: flows recorded with the ports the wrong way round", "bpfnet.bpf.c",
     "struct bpfnet_flow_key key = flow_key(host, pkt->dport, service_ip, pkt->sport, pkt->proto);",
     "struct bpfnet_flow_key key = flow_key(host, pkt->sport, service_ip, pkt->dport, pkt->proto);"),
    ("steering: a flow's port not marked, so the answers to a listed port miss the flow", "bpfnet.bpf.c",
     "\tmark_flow_port(pkt->sport);\n",
     ""),
    # (A CHECKSUM_PARTIAL skb's checksum, which the programs compute differently and pass BPF_F_PSEUDO_HDR
    # for, would not be seen: a test run cannot make such an skb; e2e_steering's case checksums judges them.)
    # The TCP/UDP checksum is computed by the programs on this kernel (kernel_reads_skb_csum); the mutants
    # marked HELPER break the kernel-helper way instead, which the fuzzer is then made to take (the way the
    # programs run on kernels before 6.2).
    ("checksum: the IPv4 header checksum not updated when an address changes", "lib/csum.h",
     "return csum_add_diff(check, csum_word4_diff(from, to));",
     "return check;"),
    ("checksum: a UDP checksum of 0 no longer kept at 0", "lib/csum.h",
     "if (proto == IPPROTO_UDP && !check)\n\t\t*after = 0;\n\telse if",
     "if"),
    ("checksum: a UDP checksum of 0 no longer kept at 0 (helpers)", "lib/csum.h",
     "return pkt->proto == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;",
     "return 0;", HELPER),
    ("checksum: a port change left out of the computed TCP/UDP checksum", "lib/csum.h",
     "*after = csum_add_diff(check, pseudo + rest);",
     "*after = csum_add_diff(check, pseudo);"),
    ("checksum: DHCP field rewrite updates the checksum with the bytes swapped", "lib/csum.h",
     "__u16 to = (__u16)(new[i] | new[i + 1] << 8);",
     "__u16 to = (__u16)(new[i] << 8 | new[i + 1]);"),
    ("checksum: a server identifier at an odd offset summed as if at an even one", "lib/dhcp.h",
     "w->csum_diff += at & 1 ? csum_swab(diff) : diff;",
     "w->csum_diff += diff;"),
    ("checksum: a relayed reply's rewritten fields left out of its UDP checksum", "lib/dhcp.h",
     "to_port,\n\t\t\t   dhcp_rewrite_diff())",
     "to_port, 0)"),
    ("checksum: a relayed DHCP message's ports and fields left out of its UDP checksum (helpers)", "lib/nat.h",
     "if (bpf_l4_csum_replace(skb, l4_csum_off(pkt), 0, rest_diff, BPF_F_MARK_MANGLED_0) ||\n\t\t    ",
     "if (", HELPER),
    ("rewrite: a relayed reply's server identifiers changed in the walk's copy only", "lib/dhcp.h",
     "if (dhcp_write_server_ids(skb, l4_off, w, service_ip))",
     "if (!skb)"),
    ("checksum: the ICMP checksum misses the quoted port", "lib/icmp.h",
     "bpf_l4_csum_replace(skb, at.icmp_check, from_port, to_port, sizeof(to_port)) ||",
     ""),
    ("trust: a packet may move a known host", "lib/neighbour.h",
     "if (known || write_neighbour(&neighbours, key, pending ? pending->mac : mac))",
     "if (write_neighbour(&neighbours, key, mac) || known)"),
    ("trust: ARP from a new sender takes a place among the confirmed neighbours", "lib/neighbour.h",
     "write_neighbour(&neighbours_unconfirmed, key, mac);",
     "write_neighbour(&neighbours, key, mac);"),
    ("trust: a dropped frame teaches a neighbour", "bpfnet.bpf.c",
     "\tif (refused != BPFNET_CTR_MAX) {\n\t\tdecide(refused);\n\t\treturn TC_ACT_SHOT;\n\t}\n"
     "\tstruct lan_ports ports = lan_ports_of(&pkt);",
     "\tif (refused != BPFNET_CTR_MAX) {\n"
     "\t\tlearn_neighbour(cfg, &a->saddr, eth->h_source, NEIGHBOUR_FROM_ACCEPTED, &a->daddr, v6);\n"
     "\t\tdecide(refused);\n\t\treturn TC_ACT_SHOT;\n\t}\n"
     "\tstruct lan_ports ports = lan_ports_of(&pkt);"),
    ("trust: broadcast DHCP relayed with the loader dead", "bpfnet.bpf.c",
     "\tif (!loader_alive(cfg)) {\n\t\t/* Like ARP",
     "\tif (0) {\n\t\t/* Like ARP"),
    ("trust: an ICMP error from off the provisioning subnet delivered into the pod", "lib/icmp_error.h",
     "if (!in_provisioning_subnet(cfg, &a->saddr, v6))\n\t\treturn BPFNET_CTR_DROP_OFF_SUBNET;",
     ""),
    ("trust: a giaddr kept from any host", "lib/dhcp.h",
     "if (head.giaddr && !dhcp_relay_configured(head.giaddr)) {",
     "if (0) {"),
    # IPv6, caught by the properties of the IPv6 batches (ipv6_frames.hpp).
    ("checksum: NAT66 leaves the address change out of the L4 checksum", "lib/csum.h",
     "return v6 ? csum_diff16(from, to) : csum_word4_diff(from->w[3], to->w[3]);",
     "return v6 ? 0 : csum_word4_diff(from->w[3], to->w[3]);"),
    ("checksum: NAT66 leaves the address change out of the L4 checksum (helpers)", "lib/nat.h",
     "if (bpf_l4_csum_replace(skb, l4_csum_off(pkt), 0, diff, BPF_F_PSEUDO_HDR | l4_csum_flags(pkt)))",
     "if (0)", HELPER),
    ("checksum: the DHCPv6 reply's unwrapping left out of its UDP checksum", "lib/dhcp6.h",
     "*diff = csum_word4_diff((__u32)old_sum, (__u32)new_sum);",
     "*diff = 0;"),
    ("checksum: the DHCPv6 reply's relay header and options, in front of its message, left out of its UDP "
     "checksum", "lib/dhcp6.h",
     "*diff = csum_word4_diff(lost, 0);",
     "*diff = 0;"),
    ("checksum: the DHCPv6 reply's last two bytes in front of its message left out of its UDP checksum "
     "(its message 2 bytes past a multiple of 4)", "lib/dhcp6.h",
     "lost = csum_add32(lost, *(const __u16 *)&s->msg[at]);",
     ""),
    ("checksum: the DHCPv6 reply's inner message summed with the option bytes after it", "lib/dhcp6.h",
     "\tdhcp6_zero_after(s, inner_off + len);\n",
     ""),
    ("bounds: the DHCPv6 reply's last bytes not written where they are no whole word", "lib/dhcp6.h",
     "\t*last = *(const __u64 *)(frame + last_off);\n",
     ""),
    ("checksum: the DHCPv6 reply's ports and payload left out of its UDP checksum (helpers)", "lib/dhcp6.h",
     "if (bpf_l4_csum_replace(skb, l4_csum_off(pkt), 0, change->rest, BPF_F_MARK_MANGLED_0) ||",
     "if (", HELPER),
    ("checksum: the DHCPv6 relay's Relay-Forward header, made in front, left out of its UDP checksum",
     "lib/dhcp6.h",
     "change.rest = csum_add32(wrap_sum, change.len + csum_word_diff(was_udp->source, to->sport) +",
     "change.rest = csum_add32(0, change.len + csum_word_diff(was_udp->source, to->sport) +"),
    ("checksum: the DHCPv6 Relay-Forward's header summed without its words", "lib/dhcp6.h",
     "\t\tsum += *(const __u32 *)&s->msg[at];\n",
     ""),
    ("bounds: the DHCPv6 Relay-Forward made in front sent without its head's last bytes (the Relay Message "
     "option's length)", "lib/dhcp6.h",
     "\t*(__u64 *)(out + total - 8) = *(const __u64 *)(frame + total - 8);\n",
     ""),
    ("bounds: the DHCPv6 Relay-Forward made in front sent without its IPv6 payload length", "lib/dhcp6.h",
     "\tip6->payload_len = len; /* no extension headers: the datagram is the payload */\n",
     ""),
    ("checksum: the ICMPv6 checksum misses the quoted address", "lib/icmp6.h",
     "if (bpf_l4_csum_replace(skb, at.icmp_check, 0, (__u32)diff, 0) ||",
     "if ("),
    ("trust: the DHCPv6 relay's answer sent elsewhere than the Interface-ID's MAC", "lib/dhcp6.h",
     "mac_copy(frame, s->peer_mac);",
     "mac_copy(frame, nic_mac);"),
    ("trust: NDP answered for a service address another node owns", "lib/ndp.h",
     "if (!(service->flags & BPFNET_SERVICE_IP_ACTIVE)) {",
     "if (0) {"),
]


def misplaced(source: pathlib.Path, mutant) -> str:
    """Why the mutant's original text cannot be replaced in the sources ("" when it occurs exactly once)."""
    name, rel, original = mutant[:3]
    count = (source / "bpf" / rel).read_text().count(original)
    return "" if count == 1 else f"mutants.py: '{name}': the original text occurs {count} times in bpf/{rel}"


def build(source: pathlib.Path, workdir: pathlib.Path, clang: str, include: str, mutant):
    """Builds the mutant in workdir: (its object, "") or (None, clang's output when it failed)."""
    tree = workdir / "src"
    shutil.copytree(source / "bpf", tree / "bpf")
    shutil.copytree(source / "maps", tree / "maps")
    rel, original, replacement = mutant[1:4]
    path = tree / "bpf" / rel
    path.write_text(path.read_text().replace(original, replacement))
    obj = workdir / "mutant.bpf.o"
    run = subprocess.run([clang, "-O2", "-g", "-Wall", "-Wextra", "-Wno-unused-variable", "-Wno-unused-function",
                          "-target", "bpf", "-D__TARGET_ARCH_x86", f"-I{include}", f"-I{tree / 'maps'}",
                          f"-I{tree / 'bpf'}", "-c", str(tree / "bpf" / "bpfnet.bpf.c"), "-o", str(obj)],
                         capture_output=True, text=True)
    return (obj, "") if run.returncode == 0 else (None, run.stderr)


def judge(args, workdir: pathlib.Path, mutant) -> tuple[str, bool]:
    """Builds one mutant in workdir and runs the fuzzer on it: (the report line, caught)."""
    name = mutant[0]
    obj, errors = build(args.source, workdir, args.clang, args.include, mutant)
    if obj is None:
        return f"ERROR    {name}: the mutant does not compile\n{errors}", False
    env = dict(os.environ)
    if HELPER in mutant[4:]:
        env["BPFNET_TEST_L4_CHECKSUMS"] = "helper"
    # The first violation decides: a caught mutant's run stops there.
    run = subprocess.run([args.fuzz, "--object", str(obj), "--frames", str(args.frames), "--seed",
                          str(args.seed), "--examples", "1", "--stop-after", "1"],
                         capture_output=True, text=True, env=env)
    violations = next((line.split(":")[1].strip() for line in run.stdout.splitlines()
                       if line.strip().startswith("violations:")), "?")
    kinds = [line.strip()[2:] for line in run.stdout.splitlines() if line.startswith("  - ")]
    if run.returncode == 1:
        return f"caught   {name}: {violations} violations ({'; '.join(kinds)})", True
    if run.returncode == 0:
        return f"SURVIVED {name}: the fuzzer found nothing", False
    return f"ERROR    {name}: bpfnet-fuzz exited {run.returncode}\n{run.stderr}", False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fuzz", required=True)
    ap.add_argument("--source", required=True, type=pathlib.Path)
    ap.add_argument("--clang", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--frames", type=int, default=200000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()

    chosen = [m for m in MUTANTS if not args.only or args.only in m[0]]
    # Every mutant's place is checked before any is built: a source change that moved one fails at once.
    problems = [reason for reason in (misplaced(args.source, m) for m in chosen) if reason]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    survivors = []
    with tempfile.TemporaryDirectory(prefix="bpfnet-mutants-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        runs = [pool.submit(judge, args, pathlib.Path(tmp) / str(i), m) for i, m in enumerate(chosen)]
        # Reported in the table's order, each as soon as it and those before it are done.
        for mutant, run in zip(chosen, runs):
            line, caught = run.result()
            print(line, flush=True)
            if not caught:
                survivors.append(mutant[0])
    if survivors:
        print(f"mutants.py: {len(survivors)} mutant(s) not caught", file=sys.stderr)
        return 1
    print("mutants.py: every mutant caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
