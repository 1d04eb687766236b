package taubench

import (
	"context"
	"errors"
	"testing"
	"unsafe"
)

func TestSessionMarshalRestore(t *testing.T) {
	for _, name := range []string{Airline, Retail} {
		t.Run(name, func(t *testing.T) {
			d := sample(t, name)
			s := d.NewSession()
			empty, err := s.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if r, err := RestoreSession(d, empty); err != nil || r.Fingerprint() != d.BaseFingerprint() {
				t.Fatalf("empty overlay round trip: %v", err)
			}
			var next []string // a follow-up call whose output must agree after restore
			switch name {
			case Airline:
				call(t, s, "book_reservation", `{"user_id": "priya_castellano_9154", "origin": "SEA", "destination": "BOS", "flight_type": "one_way", "cabin": "basic_economy",
					"flights": [{"flight_number": "HAT506", "date": "2024-05-18"}], "passengers": [{"first_name": "Priya", "last_name": "Castellano", "dob": "1994-06-21"}],
					"payment_methods": [{"payment_id": "gift_card_6603318", "amount": 88.5}, {"payment_id": "credit_card_1187205", "amount": 0.5}], "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}`)
				call(t, s, "cancel_reservation", `{"reservation_id": "Z3PLW8"}`)
				next = []string{"book_reservation", `{"user_id": "priya_castellano_9154", "origin": "SEA", "destination": "BOS", "flight_type": "one_way", "cabin": "basic_economy",
					"flights": [{"flight_number": "HAT506", "date": "2024-05-18"}], "passengers": [{"first_name": "Priya", "last_name": "Castellano", "dob": "1994-06-21"}],
					"payment_methods": [{"payment_id": "gift_card_6603318", "amount": 89}], "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}`}
			case Retail:
				call(t, s, "cancel_pending_order", `{"order_id": "#W9000105", "reason": "no longer needed"}`)
				call(t, s, "exchange_delivered_order_items", `{"order_id": "#W9000103", "item_ids": ["9004518826"], "new_item_ids": ["9004518828"], "payment_method_id": "gift_card_2209457"}`)
				next = []string{"get_user_details", `{"user_id": "tomas_reyes_2718"}`}
			}
			data, err := s.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			r, err := RestoreSession(d, data)
			if err != nil {
				t.Fatal(err)
			}
			if r.Fingerprint() != s.Fingerprint() {
				t.Fatal("restored fingerprint differs")
			}
			again, _ := r.Marshal()
			if string(again) != string(data) {
				t.Errorf("re-marshal differs:\n%s\n%s", again, data)
			}
			a, b := call(t, s, next[0], next[1]), call(t, r, next[0], next[1])
			if a != b {
				t.Errorf("continued call differs:\n%s\n%s", a, b)
			}
			if r.Fingerprint() != s.Fingerprint() {
				t.Error("fingerprints diverged after the same call")
			}
			// Order of new records survives (search order depends on it).
			if name == Airline {
				var ids []string
				r.each(tReservations, func(id string, _ any) bool { ids = append(ids, id); return true })
				if got := ids[len(ids)-2:]; got[0] != "HATHAT" || got[1] != "HATHAU" {
					t.Errorf("new reservations order %v", got)
				}
			}
		})
	}
}

func TestRestoreRejects(t *testing.T) {
	air, ret := sample(t, Airline), sample(t, Retail)
	data, _ := air.NewSession().Marshal()
	if _, err := RestoreSession(ret, data); !errors.Is(err, ErrBaseMismatch) {
		t.Errorf("restore on other domain: %v", err)
	}
	for _, bad := range []string{`nope`, `[]`, `{"domain": "airline", "base": "` + air.Digest() + `", "tables": {"flights": [["HAT000", {}, false]]}}`,
		`{"domain": "airline", "base": "` + air.Digest() + `", "tables": {"hotels": []}}`} {
		if _, err := RestoreSession(air, []byte(bad)); err == nil {
			t.Errorf("restore of %s succeeded", bad)
		}
	}
}

// TestSessionIsCheap: a new conversation's state is a small struct and
// shares the base until it writes.
func TestSessionIsCheap(t *testing.T) {
	d := sample(t, Airline)
	if size := unsafe.Sizeof(Session{}); size > 16<<10 {
		t.Errorf("session is %d bytes", size)
	}
	allocs := testing.AllocsPerRun(100, func() { _ = d.NewSession() })
	if allocs > 1 {
		t.Errorf("NewSession allocates %v times", allocs)
	}
	s := d.NewSession()
	call(t, s, "get_user_details", `{"user_id": "nora_quist_4821"}`)
	call(t, s, "search_direct_flight", `{"origin": "BOS", "destination": "SEA", "date": "2024-05-21"}`)
	for i, m := range s.over {
		if len(m) != 0 {
			t.Errorf("reads copied %d records of table %d", len(m), i)
		}
	}
	if _, err := s.Call(context.Background(), "cancel_reservation", []byte(`{"reservation_id": "Q7RM2K"}`)); err != nil {
		t.Fatal(err)
	}
	if n := len(s.over[tReservations]); n != 1 || len(s.over[tUsers]) != 0 {
		t.Errorf("a cancel copied %d reservations, %d users", n, len(s.over[tUsers]))
	}
}

// A session that wrote nothing marshals to the bytes an overlay-less
// session of its domain always gave, shared but capped, and a write
// changes its own bytes, never those another session was given.
func TestSessionMarshalPristine(t *testing.T) {
	d := sample(t, Airline)
	a, b := d.NewSession(), d.NewSession()
	call(t, a, "get_reservation_details", `{"reservation_id": "Z3PLW8"}`) // a read
	ma, _ := a.Marshal()
	mb, _ := b.Marshal()
	if want := string(b.marshal()); string(ma) != want || string(mb) != want {
		t.Fatalf("pristine %s / %s, want %s", ma, mb, want)
	}
	if cap(ma) != len(ma) {
		t.Fatalf("shared bytes with room to append in place: cap %d, len %d", cap(ma), len(ma))
	}
	_ = append(ma, '!')
	call(t, a, "cancel_reservation", `{"reservation_id": "Z3PLW8"}`)
	written, _ := a.Marshal()
	if mb2, _ := b.Marshal(); string(written) == string(mb) || string(mb2) != string(mb) {
		t.Fatalf("after a write: %s; the other session's %s", written, mb2)
	}
}

// Writes stays the same across reads and refused calls, and moves with a
// write, also on a record the session had already copied.
func TestSessionWritesCountsWrites(t *testing.T) {
	d := sample(t, Airline)
	s := d.NewSession()
	steps := []struct {
		name, args string
		writes     bool
	}{
		{"get_reservation_details", `{"reservation_id": "Z3PLW8"}`, false},
		{"cancel_reservation", `{"reservation_id": "NOSUCH"}`, false},
		{"think", `{"thought": "the fare"}`, false},
		{"update_reservation_baggages", `{"reservation_id": "Z3PLW8", "total_baggages": 1, "nonfree_baggages": 0, "payment_id": "credit_card_4410027"}`, true},
		{"get_reservation_details", `{"reservation_id": "Z3PLW8"}`, false},
		{"cancel_reservation", `{"reservation_id": "Z3PLW8"}`, true},
	}
	for _, st := range steps {
		w := s.Writes()
		_, err := s.Call(context.Background(), st.name, []byte(st.args))
		if moved := s.Writes() != w; moved != st.writes {
			t.Errorf("%s(%s) (err %v): write counted %v, want %v", st.name, st.args, err, moved, st.writes)
		}
	}
}
