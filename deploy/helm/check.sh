#!/usr/bin/env bash
# The Helm chart (deploy/helm/benchstream) rendered by Helm itself and validated by kubeconform, with the tools
# built from the Go module proxy once and cached outside the repository, like deploy/local/*.sh cache their jars.
#
#   bash deploy/helm/check.sh [check]   (npm run test:k8s) the tools (built if missing), `helm lint`, each rendering
#                                       compared with the committed one in deploy/helm/rendered/, kubeconform -strict
#                                       on each against the schemas of test/fixtures/k8s (no network)
#   bash deploy/helm/check.sh render    (npm run k8s:render) writes deploy/helm/rendered/*.yaml again
#   bash deploy/helm/check.sh tools     builds the tools if missing and prints their paths
#   bash deploy/helm/check.sh paths     prints where the tools are (or would be), builds nothing
#
# Renderings: default.yaml (the chart's values) and <name>.yaml for each deploy/helm/benchstream/ci/<name>-values.yaml,
# release "benchstream" in namespace "benchstream", for Kubernetes $KUBE_VERSION. `npm test` validates the committed
# renderings with the same schemas (test/unit/helm-chart.test.ts) and, when these tools are cached, renders again.
#
# Environment:
#   HELM_VERSION          [3.21.4]      KUBECONFORM_VERSION  [0.7.0]
#   BENCHSTREAM_K8S_TOOLS tool cache    [${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/k8s-tools]
#   GO                    the go command [go on PATH, else /usr/local/go/bin/go]
# Building needs Go 1.24+ and the module proxy: about 4 minutes for helm and 15 s for kubeconform on 2 cores.
set -euo pipefail
SCRIPT_NAME=deploy/helm/check.sh
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../local/lib.sh
source "$ROOT/deploy/local/lib.sh"

HELM_VERSION="${HELM_VERSION:-3.21.4}"
KUBECONFORM_VERSION="${KUBECONFORM_VERSION:-0.7.0}"
KUBE_VERSION=1.36.0
TOOLS="${BENCHSTREAM_K8S_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/k8s-tools}"
HELM="$TOOLS/helm-v$HELM_VERSION/helm"
KUBECONFORM="$TOOLS/kubeconform-v$KUBECONFORM_VERSION/kubeconform"
CHART="$ROOT/deploy/helm/benchstream"
RENDERED="$ROOT/deploy/helm/rendered"

go_cmd() {
  if [[ -n "${GO:-}" ]]; then echo "$GO"
  elif command -v go >/dev/null 2>&1; then command -v go
  elif [[ -x /usr/local/go/bin/go ]]; then echo /usr/local/go/bin/go
  else die "Go is needed to build helm and kubeconform once (https://go.dev/dl/), or set GO"
  fi
}

# build_tool BINARY MODULE@VERSION LDFLAGS: go install into the binary's own directory, then rename into place, so
# that a cache holds a whole binary or none.
build_tool() {
  local bin="$1" module="$2" ldflags="$3" dir
  [[ -x "$bin" ]] && return 0
  dir="$(dirname "$bin")"
  mkdir -p "$dir"
  note "building $module into $dir (once)"
  GOBIN="$dir/.partial" GOFLAGS=-mod=mod "$(go_cmd)" install -ldflags "$ldflags" "$module"
  mv "$dir/.partial/$(basename "$bin")" "$bin"
  rmdir "$dir/.partial"
}

tools() {
  build_tool "$KUBECONFORM" "github.com/yannh/kubeconform/cmd/kubeconform@v$KUBECONFORM_VERSION" \
    "-X main.version=v$KUBECONFORM_VERSION"
  build_tool "$HELM" "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION" \
    "-X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION"
}

# render OUTDIR: one file per value set.
render() {
  local out="$1" values name
  mkdir -p "$out"
  # The chart links dashboards/generated in; helm says so on stderr for every render.
  "$HELM" template benchstream "$CHART" --namespace benchstream --kube-version "$KUBE_VERSION" \
    2> >(grep -v 'found symbolic link in path' >&2) >"$out/default.yaml"
  for values in "$CHART"/ci/*-values.yaml; do
    name="$(basename "$values" -values.yaml)"
    "$HELM" template benchstream "$CHART" --namespace benchstream --kube-version "$KUBE_VERSION" -f "$values" \
      2> >(grep -v 'found symbolic link in path' >&2) >"$out/$name.yaml"
  done
}

TMP=
trap '[[ -z "$TMP" ]] || rm -rf "$TMP"' EXIT

check() {
  local tmp schemas f
  TMP="$(mktemp -d)"
  tmp="$TMP"
  "$HELM" lint "$CHART" --kube-version "$KUBE_VERSION" --quiet 2> >(grep -v 'found symbolic link in path' >&2)
  render "$tmp/rendered"
  diff -ru "$RENDERED" "$tmp/rendered" ||
    die "the committed renderings differ from the chart's: run npm run k8s:render and commit deploy/helm/rendered"
  [[ -f "$ROOT/dist/test/helpers/k8s-schemas.js" ]] || die "run npm run build first (the schemas come from dist/)"
  schemas="$tmp/schemas"
  node --input-type=module -e \
    "const m = await import('$ROOT/dist/test/helpers/k8s-schemas.js'); m.writeSchemaFiles('$schemas')"
  for f in "$tmp"/rendered/*.yaml; do
    "$KUBECONFORM" -strict -summary -exit-on-error \
      -schema-location "$schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$f"
  done
}

case "${1:-check}" in
  tools) tools; echo "$HELM"; echo "$KUBECONFORM" ;;
  paths) echo "$HELM"; echo "$KUBECONFORM"; echo "$KUBE_VERSION" ;;
  render) tools; rm -rf "$RENDERED"; render "$RENDERED"; note "wrote $RENDERED" ;;
  check) tools; check ;;
  *) die "unknown command '$1': use check, render, tools or paths" ;;
esac
