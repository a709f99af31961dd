// Package conformance runs the Gateway API conformance suite (the Go module
// sigs.k8s.io/gateway-api/conformance) against minimesh on the cluster of the current kubeconfig.
//
// The suite's own flags choose what runs (conformance profiles, supported and exempt features, the
// annotation that meshes its namespaces, the report file), as Linkerd's conformance run passes them;
// `npm run conformance` (scripts/conformance.sh) sets them from features.txt and writes the report
// into docs/conformance/.
package conformance

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
)

func TestConformance(t *testing.T) {
	opts := conformance.DefaultOptions(t)
	if len(opts.ConformanceProfiles) == 0 {
		t.Fatal("no --conformance-profiles: run npm run conformance (scripts/conformance.sh), which passes MESH-HTTP,MESH-GRPC")
	}
	conformance.RunConformanceWithOptions(t, opts)
}
