package rules

import (
	"testing"

	"github.com/reinception/rein/internal/testutil"
)

// taubenchDir returns ../shared/taubench relative to the module root, or
// skips the test when it is missing (fails when CI is set).
func taubenchDir(t testing.TB) string {
	t.Helper()
	return testutil.TauBench(t)
}

// testProducts loads the τ-bench store's product catalogue (skipping as
// taubenchDir does when ../shared/taubench is missing).
func testProducts(t testing.TB) *ProductCatalogue {
	t.Helper()
	pc, err := LoadProductCatalogue(taubenchDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return pc
}
