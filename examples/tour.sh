#!/usr/bin/env bash
# The README's tour of the CLI, every command in order, on a fresh database; it stops at the
# first command that fails. tests/cli/test_readme_tour.py runs it, so the tour stays true.
#
#   examples/tour.sh                  # in a scratch folder: ./tour.db, ./tour-config.db
#   FLEET=.venv/bin/fleet examples/tour.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${TOUR_DIR:-$(mktemp -d)}
cd "$work"
FLEET=${FLEET:-fleet}
fleet() { echo "+ fleet $*" >&2; "$FLEET" "$@"; }
field() {  # field KEY [KEY…]: one value out of the JSON document on stdin
  python3 -c 'import json, sys
value = json.load(sys.stdin)
for key in sys.argv[1:]:
    value = value[int(key)] if key.isdigit() else value[key]
print(value)' "$@"
}
expect_code() {  # expect_code CODE COMMAND…: the command fails with that error code
  local code=$1
  shift
  local out
  if out=$("$@" --json); then echo "expected $code, the command succeeded" >&2; return 1; fi
  [ "$(echo "$out" | field error code)" = "$code" ] || { echo "expected $code: $out" >&2; return 1; }
}
export BCFLEET_DB=sqlite:///$work/tour.db  # README: the tour's own database
pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT

# Tenants, pools and hosts
fleet tenants create acme --name ACME
fleet tenants create globex --name Globex
fleet pools create --tenant root --name vps-fra --kind vps-host --gpu-model L40S --overcommit vcpu=2,memoryGiB=1.5
fleet pools offer --tenant root --pool vps-fra --to acme
fleet hosts adopt --tenant root --pool vps-fra --name fra-01 --label bc.dev/cap.instance.placement=true
fleet hosts report --host fra-01 --file "$here/inventory.json"
fleet jobs tick --job vps.hosts
fleet hosts list

# Errors carry a stable code
expect_code INVALID_INPUT fleet flavors create --tenant root --pool vps-fra --name x --vcpu -1 --memory-gib 2 --disk-gib 3

# Flavors (document 000)
fleet flavors create --tenant root --pool vps-fra --name gpu1.l40s --vcpu 8 --memory-gib 32 --disk-gib 200 --gpus 1 --numa-affine --pinned --hugepage-size 1073741824
fleet flavors create --tenant root --pool vps-fra --name g1.small --vcpu 2 --memory-gib 4 --disk-gib 40
fleet flavors create --tenant root --pool vps-fra --name g1.large --vcpu 8 --memory-gib 32 --disk-gib 160
fleet flavors list --tenant acme --pool vps-fra
fleet flavors update --tenant root --pool vps-fra --name gpu1.l40s --vcpu 8 --memory-gib 64 --disk-gib 200 --gpus 1 --numa-affine --pinned --hugepage-size 1073741824
fleet flavors create --tenant root --pool vps-fra --name g1.old --vcpu 1 --memory-gib 2 --disk-gib 20
fleet flavors delete --tenant root --pool vps-fra --name g1.old

# Instances and quotas
fleet quotas set --tenant acme --pool vps-fra --vcpu 64 --memory-gib 256 --gpu 4
gpu_vm=$(fleet instances create --tenant acme --pool vps-fra --flavor gpu1.l40s --json | field id)
vm=$(fleet instances create --tenant acme --pool vps-fra --flavor g1.small --idempotency-key web-1 --json | field id)
again=$(fleet instances create --tenant acme --pool vps-fra --flavor g1.small --idempotency-key web-1 --json | field id)
[ "$again" = "$vm" ] || { echo "the same idempotency key made a second instance" >&2; exit 1; }
fleet instances create --tenant acme --pool vps-fra --flavor g1.small --count 3 --name web --idempotency-key scale-7
fleet instances create --tenant acme --pool vps-fra --flavor g1.small --count 2 --all-or-nothing
fleet instances list --tenant acme
fleet instances stop "$vm"
fleet instances resize "$vm" --flavor g1.large
fleet instances start "$vm"
fleet instances spec "$gpu_vm" --format libvirt
fleet doctor --invariants

# FleetConfig, on a database of its own
config=(--db "sqlite:///$work/tour-config.db")
fleet validate -f "$here/../fleet.example.yaml"
fleet plan -f "$here/../fleet.example.yaml" "${config[@]}"
fleet plan -f "$here/../fleet.example.yaml" --out plan.json "${config[@]}"
fleet apply plan.json "${config[@]}"
fleet plan -f "$here/../fleet.example.yaml" --detailed-exitcode "${config[@]}"

# IAM
alice=$(fleet iam tokens create --tenant acme --name alice --role admin --expires-in 90d --json | field id)
fleet iam tokens list --tenant acme
fleet iam tokens rotate --tenant acme "$alice"
fleet iam policies create --tenant acme --name spot-only --file "$here/policy.json" --attach alice

# GPU reservations, spot capacity and preemption with notice (document 003)
fleet pools create --tenant root --name gpu-burst --kind vps-host --gpu-model L40S
fleet pools offer --tenant root --pool gpu-burst --to acme
fleet pools offer --tenant root --pool gpu-burst --to globex
fleet hosts adopt --tenant root --pool gpu-burst --name burst-01 --label bc.dev/cap.instance.placement=true
fleet hosts report --host burst-01 --file "$here/inventory.json"
fleet jobs tick --job vps.hosts
fleet reservations create --tenant globex --pool gpu-burst --gpus 4 --duration 12h --spot --idempotency-key sweep-042
fleet capacity preview --tenant acme --pool gpu-burst --gpus 4 --duration 12h
fleet reservations create --tenant acme --pool gpu-burst --gpus 4 --duration 4h
fleet events list --tenant globex --type reservation.preempting

# Compute settings, spare instances and their credits (document 004)
fleet pools create --tenant root --name vps-ams --kind vps-host --overcommit vcpu=4
fleet pools offer --tenant root --pool vps-ams --to acme
fleet hosts adopt --tenant root --pool vps-ams --name ams-01 --label bc.dev/cap.instance.placement=true
fleet hosts report --host ams-01 --file "$here/inventory.json"
fleet jobs tick --job vps.hosts
fleet settings compute set --tenant acme --serverless-pool vps-ams --spares large=2 --default large
web=$(fleet services create --tenant acme --workspace prod --name web --size large --json | field id)
fleet jobs tick --job spares
fleet agent simulate --once --boot-seconds 0
fleet services deploy "$web"

# Jobs and metering
fleet iam setup --meters
fleet jobs tick
fleet usage list --tenant acme --meter credits
fleet usage export --format csv --since 2026-11-01T00:00:00Z > usage.csv
fleet usage replay

# Provider pools, against the local Hetzner-compatible server
export HCLOUD_TOKEN=tour-token  # README: the provider account reads it
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$FLEET" provider-fake --port "$port" > fake.log 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q "Fake Hetzner" fake.log && break; sleep 0.1; done
fleet provider-accounts create --tenant root --name hz --provider hetzner --token-env HCLOUD_TOKEN --endpoint "http://127.0.0.1:$port/v1"
fleet provider-accounts offers hz --tenant root --kind vps --min-vcpu 2
fleet pools create --tenant root --name hetzner-fsn --kind provider --provider-account hz
fleet flavors create --tenant root --pool hetzner-fsn --name cx23 --vcpu 2 --memory-gib 4 --disk-gib 40 --offer cx23

# The HTTP API and the host agent
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$FLEET" serve --port "$port" > serve.log 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.1; done
agent_token=$(fleet iam tokens create --tenant root --name fra-01-agent --role agent --host fra-01 --json | field token)
fleet agent run --server "http://127.0.0.1:$port" --token "$agent_token" --host fra-01 --simulate --once
echo "The tour ran to the end."
