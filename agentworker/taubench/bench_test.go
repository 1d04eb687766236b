package taubench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Targets (issue 4, 2-core machine): airline load ≤ 500 ms; tool call
// ≤ 50 µs median on an overlay; full airline fingerprint ≤ 150 ms; a new
// conversation ≤ 1 ms and ≤ 16 KiB before its first write.

func BenchmarkLoadAirline(b *testing.B) {
	dir := filepath.Join(taubenchDir(b), Airline)
	for b.Loop() {
		if _, err := LoadFS(Airline, os.DirFS(dir)); err != nil { // LoadFS: Load would hand back its first parse
			b.Fatal(err)
		}
	}
}

func BenchmarkFingerprintAirline(b *testing.B) {
	d := fixtureDomain(b, Airline)
	d.BaseFingerprint() // pre-render the base once, as a running worker has
	s := d.NewSession()
	if _, err := s.Call(context.Background(), "cancel_reservation", []byte(`{"reservation_id": "4WQ150"}`)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = s.Fingerprint()
	}
}

func BenchmarkFirstFingerprintAirline(b *testing.B) {
	dir := filepath.Join(taubenchDir(b), Airline)
	for b.Loop() {
		b.StopTimer()
		d, err := LoadFS(Airline, os.DirFS(dir)) // a fresh, unrendered domain
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		_ = d.BaseFingerprint()
	}
}

func BenchmarkNewSession(b *testing.B) {
	d := sample(b, Airline)
	b.ReportAllocs()
	for b.Loop() {
		_ = d.NewSession()
	}
}

func BenchmarkToolCall(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct{ name, domain, tool, args string }{
		{"get_reservation_details", Airline, "get_reservation_details", `{"reservation_id": "4WQ150"}`},
		{"get_user_details", Airline, "get_user_details", `{"user_id": "mia_li_3668"}`},
		{"update_reservation_baggages", Airline, "update_reservation_baggages", `{"reservation_id": "4WQ150", "total_baggages": 1, "nonfree_baggages": 0, "payment_id": "credit_card_4421486"}`},
		{"search_direct_flight", Airline, "search_direct_flight", `{"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}`},
		{"search_onestop_flight", Airline, "search_onestop_flight", `{"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}`},
		{"find_user_id_by_name_zip", Retail, "find_user_id_by_name_zip", `{"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}`},
		{"get_order_details", Retail, "get_order_details", `{"order_id": "#W2378156"}`},
		{"modify_pending_order_address", Retail, "modify_pending_order_address", `{"order_id": "#W4817420", "address1": "1 A St", "address2": "", "city": "B", "state": "CA", "country": "USA", "zip": "90001"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := fixtureDomain(b, bc.domain)
			s := d.NewSession()
			if _, err := Observe(ctx, s, bc.tool, []byte(bc.args)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Observe(ctx, s, bc.tool, []byte(bc.args)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
