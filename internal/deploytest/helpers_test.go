//go:build !race

package deploytest

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// deployment returns the one Deployment among objs.
func deployment(t *testing.T, objs []object) *appsv1.Deployment {
	t.Helper()
	var found *appsv1.Deployment
	for _, o := range objs {
		if d, ok := o.value.(*appsv1.Deployment); ok {
			if found != nil {
				t.Fatal("more than one Deployment")
			}
			found = d
		}
	}
	if found == nil {
		t.Fatal("no Deployment")
	}
	return found
}
