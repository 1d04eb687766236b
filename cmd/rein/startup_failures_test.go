package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/natsserver"
)

// A client command that cannot reach NATS, or is refused by it, fails at
// once in one line that names the address and the fix.
func TestClientStartupFailuresSayWhatToDo(t *testing.T) {
	h := testutil.StartJetStream(t, "")
	other, err := natsserver.EnsureKeyring(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"nothing listening", []string{"--nats-url", "nats://127.0.0.1:1"}, []string{"nats://127.0.0.1:1", "start rein serve"}},
		{"no credentials", []string{"--nats-url", h.URL(), "--data-dir", t.TempDir()}, []string{h.URL(), "no credentials given", "--data-dir"}},
		{"a key of another rein", []string{"--nats-url", h.URL(), "--nats-nkey", other.SeedFile(natsserver.IdentityAdmin)}, []string{"does not know the key", "rein keys list"}},
	}
	for _, c := range cases {
		// The deadline only guards against a hang; the command must give up
		// on its own, with the error below, long before it.
		guard, stop := context.WithTimeout(t.Context(), time.Minute)
		out, err := runCLI(t, guard, append([]string{"publish", "--tenant", "acme", "--conversation", "c1", "--turn", "1", "--text", "hi"}, c.args...)...)
		hung := guard.Err() != nil
		stop()
		if hung {
			t.Errorf("%s: publish hung: still running when the 1-minute hang guard ran out (err %v)", c.name, err)
			continue
		}
		if err == nil {
			t.Errorf("%s: publish succeeded: %s", c.name, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: more than one line: %q", c.name, err)
		}
	}
}
