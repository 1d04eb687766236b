package planted

import (
	"fmt"
	"testing"
)

// TestNameKeysAreToolKeys checks the memo gives what toolKeys computes,
// on a first call and a remembered one, and stays within its bound.
func TestNameKeysAreToolKeys(t *testing.T) {
	for _, name := range []string{"cancel_reservation", "CANCEL-RESERVATION", "cancel_reservat\u0456on", "transfer_to_human_agents", ""} {
		want := toolKeys(name)
		for range 2 {
			if got := nameKeys(name); got != want {
				t.Fatalf("nameKeys(%q) = %q, want %q", name, got, want)
			}
		}
	}
	for i := range maxNameKeys + 10 {
		nameKeys(fmt.Sprintf("tool_%d", i))
	}
	nameKeyMemo.RLock()
	n := len(nameKeyMemo.keys)
	nameKeyMemo.RUnlock()
	if n > maxNameKeys {
		t.Fatalf("the memo holds %d names, more than %d", n, maxNameKeys)
	}
}
