package schemas

import (
	"reflect"
	"testing"
	"time"
)

// directEvent builds what sdk-go's setters build, or declines.
func TestDirectEventMatchesSDKSetters(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)
	m := Meta{Tenant: "acme", Conversation: "c-42", Turn: 7}
	traced := m
	traced.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	big := m
	big.Turn = MaxTurn
	for _, c := range []struct {
		name, typ, id, source string
		m                     Meta
		declined              bool
	}{
		{"plain", TypeTurn, "turn.acme.c-42.7-user", Source, m, false},
		{"traced", TypeStep, "step.acme.c-42.7.2", "/ingress", traced, false},
		{"turn past int32", TypeTask, "task.acme.c-42.x", Source, big, false},
		{"source with parts", TypeTurn, "x", "https://user@example.test:8080/p?q=1#f", m, false},
		{"source twice (cached)", TypeTurn, "x", "https://user@example.test:8080/p?q=1#f", m, false},
		{"id with space", TypeTurn, " x", Source, m, true},
		{"empty id", TypeTurn, "", Source, m, true},
		{"bad source", TypeTurn, "x", "%zz", m, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := sdkEvent(c.typ, c.id, c.source, c.m, now)
			got, ok := directEvent(c.typ, c.id, c.source, c.m, now)
			if ok == c.declined {
				t.Fatalf("directEvent ok = %v, want %v", ok, !c.declined)
			}
			if ok && !reflect.DeepEqual(got, want) {
				t.Fatalf("direct event differs\n got %#v\nwant %#v", got.Context, want.Context)
			}
		})
	}
}
