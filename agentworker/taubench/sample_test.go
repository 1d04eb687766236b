package taubench

import (
	"context"
	"strings"
	"testing"
)

func call(t *testing.T, s *Session, tool, args string) string {
	t.Helper()
	out, err := s.Call(context.Background(), tool, []byte(args))
	if err != nil {
		t.Fatalf("%s(%s): %v", tool, args, err)
	}
	return out
}

func field(t *testing.T, s *Session, table, id string, keys ...string) any {
	t.Helper()
	v, ok := s.Record(table, id)
	if !ok {
		t.Fatalf("%s/%s missing", table, id)
	}
	v, err := path(v, keys...)
	if err != nil {
		t.Fatalf("%s/%s %v: %v", table, id, keys, err)
	}
	return v
}

func TestSampleDataLoads(t *testing.T) {
	for name, counts := range map[string][3]int{Airline: {9, 5, 3}, Retail: {6, 4, 2}} {
		d := sample(t, name)
		for i, tb := range d.tables {
			if len(tb.keys) != counts[i] {
				t.Errorf("%s/%s: %d records, want %d", name, tb.name, len(tb.keys), counts[i])
			}
		}
		if len(d.Tools()) != map[string]int{Airline: 14, Retail: 16}[name] {
			t.Errorf("%s: %d tools", name, len(d.Tools()))
		}
		if len(d.BaseFingerprint()) != 64 {
			t.Errorf("%s: bad fingerprint", name)
		}
	}
	u := field(t, sample(t, Airline).NewSession(), "users", "nora_quist_4821", "reservations").([]any)
	if len(u) != 3 {
		t.Errorf("demo user has %d reservations, want 3", len(u))
	}
	if _, err := Sample("hotel"); err == nil {
		t.Error("Sample(hotel) succeeded")
	}
}

func TestAirlineSampleWorkflow(t *testing.T) {
	d := sample(t, Airline)
	base := d.BaseFingerprint()
	s := d.NewSession()

	if out := call(t, s, "get_reservation_details", `{"reservation_id": "Q7RM2K"}`); !strings.HasPrefix(out, `{"reservation_id": "Q7RM2K", "user_id": "nora_quist_4821", "origin": "BOS"`) {
		t.Errorf("details: %.120s", out)
	}
	direct := call(t, s, "search_direct_flight", `{"origin": "BOS", "destination": "SEA", "date": "2024-05-21"}`)
	if !strings.Contains(direct, `"flight_number": "HAT505"`) || strings.Contains(direct, `"dates"`) || strings.Contains(direct, `"date"`) {
		t.Errorf("direct search: %.300s", direct)
	}
	onestop := call(t, s, "search_onestop_flight", `{"origin": "BOS", "destination": "SEA", "date": "2024-05-21"}`)
	if !strings.HasPrefix(onestop, `[[{"flight_number": "HAT501"`) || !strings.Contains(onestop, `"flight_number": "HAT503"`) || !strings.Contains(onestop, `"date": "2024-05-21"}]]`) {
		t.Errorf("one-stop search: %.300s", onestop)
	}
	if out := call(t, s, "list_all_airports", `{}`); !strings.HasPrefix(out, `{"SFO": "San Francisco", "JFK": "New York"`) {
		t.Errorf("airports: %.80s", out)
	}
	if out := call(t, s, "calculate", `{"expression": "(217 + 30) * 2 / 3"}`); out != "164.67" {
		t.Errorf("calculate = %s", out)
	}

	// Book with a certificate and a credit card: the certificate disappears.
	out := call(t, s, "book_reservation", `{"user_id": "omar_lindqvist_3307", "origin": "ORD", "destination": "MIA", "flight_type": "one_way", "cabin": "economy",
		"flights": [{"flight_number": "HAT509", "date": "2024-05-19"}], "passengers": [{"first_name": "Omar", "last_name": "Lindqvist", "dob": "1972-11-30"}],
		"payment_methods": [{"payment_id": "certificate_5520718", "amount": 100}, {"payment_id": "credit_card_7281934", "amount": 69}],
		"total_baggages": 1, "nonfree_baggages": 0, "insurance": "yes"}`)
	if !strings.HasPrefix(out, `{"reservation_id": "HATHAT", "user_id": "omar_lindqvist_3307"`) || !strings.Contains(out, `"created_at": "2024-05-15T15:00:00"`) {
		t.Errorf("booking: %.300s", out)
	}
	if pm := field(t, s, "users", "omar_lindqvist_3307", "payment_methods").(*Object); pm.Has("certificate_5520718") {
		t.Error("certificate not consumed")
	}
	if r := field(t, s, "users", "omar_lindqvist_3307", "reservations").([]any); r[len(r)-1] != "HATHAT" {
		t.Errorf("user reservations %v", r)
	}

	// Cancel: refunds appended, status last.
	out = call(t, s, "cancel_reservation", `{"reservation_id": "K8DHX4"}`)
	if !strings.HasSuffix(out, `"status": "cancelled"}`) {
		t.Errorf("cancel: %.300s", out)
	}
	hist := field(t, s, "reservations", "K8DHX4", "payment_history").([]any)
	if len(hist) != 2 || !Equal(arg(hist[1].(*Object), "amount"), int64(-457)) {
		t.Errorf("refunds: %s", ToPyJSON(hist))
	}

	// Bags: one paid bag on the gift card.
	call(t, s, "update_reservation_baggages", `{"reservation_id": "Q7RM2K", "total_baggages": 2, "nonfree_baggages": 1, "payment_id": "gift_card_9930145"}`)
	if bal := field(t, s, "users", "nora_quist_4821", "payment_methods", "gift_card_9930145", "amount"); !Equal(bal, int64(130)) {
		t.Errorf("gift card after bags = %v", bal)
	}

	// Flight change to a cheaper day refunds to the gift card (negative charge).
	call(t, s, "update_reservation_flights", `{"reservation_id": "Q7RM2K", "cabin": "economy", "flights": [{"flight_number": "HAT505", "date": "2024-05-21"}], "payment_id": "gift_card_9930145"}`)
	segs := field(t, s, "reservations", "Q7RM2K", "flights").([]any)
	if arg(segs[0].(*Object), "date") != "2024-05-21" || arg(segs[0].(*Object), "origin") != "BOS" {
		t.Errorf("new itinerary %s", ToPyJSON(segs))
	}

	call(t, s, "update_reservation_passengers", `{"reservation_id": "Q7RM2K", "passengers": [{"first_name": "Nora", "last_name": "Quist-Berg", "dob": "1986-03-14"}]}`)
	if out := call(t, s, "send_certificate", `{"user_id": "nora_quist_4821", "amount": 50}`); out != "Certificate certificate_3221322 added to user nora_quist_4821 with amount 50." {
		t.Errorf("certificate: %s", out)
	}
	if out := call(t, s, "send_certificate", `{"user_id": "nora_quist_4821", "amount": 50.0}`); out != "Certificate certificate_3221323 added to user nora_quist_4821 with amount 50.0." {
		t.Errorf("certificate: %s", out)
	}
	if out := call(t, s, "transfer_to_human_agents", `{"summary": "x"}`); out != "Transfer successful" {
		t.Errorf("transfer: %s", out)
	}
	changed := s.Changed()
	if len(changed["reservations"]) != 3 || len(changed["users"]) != 2 || changed["flights"] != nil {
		t.Errorf("changed records: %v", keysOf(changed))
	}
	if d.BaseFingerprint() != base || d.NewSession().Fingerprint() != base {
		t.Error("a session's writes leaked into the base")
	}
	if s.Fingerprint() == base {
		t.Error("fingerprint did not change")
	}
}

func keysOf(m map[string]map[string]any) map[string][]string {
	out := map[string][]string{}
	for t, recs := range m {
		for id := range recs {
			out[t] = append(out[t], id)
		}
	}
	return out
}

func TestRetailSampleWorkflow(t *testing.T) {
	d := sample(t, Retail)
	base := d.BaseFingerprint()
	s := d.NewSession()
	if out := call(t, s, "find_user_id_by_email", `{"email": "Lena.Okafor@Example.com"}`); out != "lena_okafor_5530" {
		t.Errorf("by email: %s", out)
	}
	if out := call(t, s, "find_user_id_by_name_zip", `{"first_name": "TOMAS", "last_name": "reyes", "zip": "78704"}`); out != "tomas_reyes_2718" {
		t.Errorf("by name: %s", out)
	}
	if out := call(t, s, "list_all_product_types", `{}`); out != `{"Desk Lamp": "5820049317", "Pour-over Kettle": "8104462973", "Trail Backpack": "4718203956", "Wool Socks": "6935518402"}` {
		t.Errorf("product types: %s", out)
	}
	if out := call(t, s, "get_product_details", `{"product_id": "5820049317"}`); !strings.Contains(out, `"available": false, "price": 42.3}`) {
		t.Errorf("product: %.300s", out)
	}

	// Cancel a gift-card order: the balance is credited and rounded.
	call(t, s, "cancel_pending_order", `{"order_id": "#W9000105", "reason": "ordered by mistake"}`)
	if bal := field(t, s, "users", "tomas_reyes_2718", "payment_methods", "gift_card_4471180", "balance"); !Equal(bal, 283.59) {
		t.Errorf("balance after cancel = %v", bal)
	}
	if r := field(t, s, "orders", "#W9000105", "cancel_reason"); r != "ordered by mistake" {
		t.Errorf("cancel_reason %v", r)
	}

	// Modify both units of a duplicated item: each maps to the next unit.
	out := call(t, s, "modify_pending_order_items", `{"order_id": "#W9000101", "item_ids": ["7718204463", "7718204463"], "new_item_ids": ["7718204465", "7718204464"], "payment_method_id": "credit_card_3340912"}`)
	if !strings.Contains(out, `"status": "pending (item modified)"`) {
		t.Errorf("modify items: %.300s", out)
	}
	items := field(t, s, "orders", "#W9000101", "items").([]any)
	if arg(items[1].(*Object), "item_id") != "7718204465" || arg(items[2].(*Object), "item_id") != "7718204464" {
		t.Errorf("items %s", ToPyJSON(items))
	}
	hist := field(t, s, "orders", "#W9000101", "payment_history").([]any)
	last := hist[len(hist)-1].(*Object)
	if arg(last, "transaction_type") != "refund" || !Equal(arg(last, "amount"), 2.549999999999999) {
		t.Errorf("price difference entry %s", ToPyJSON(last))
	}
	if _, err := s.Call(context.Background(), "modify_pending_order_items", []byte(`{"order_id": "#W9000101", "item_ids": [], "new_item_ids": [], "payment_method_id": "credit_card_3340912"}`)); err == nil || err.Error() != "Error: non-pending order cannot be modified" {
		t.Errorf("second modification: %v", err)
	}

	call(t, s, "exchange_delivered_order_items", `{"order_id": "#W9000103", "item_ids": ["9004518826"], "new_item_ids": ["9004518828"], "payment_method_id": "gift_card_2209457"}`)
	if diff := field(t, s, "orders", "#W9000103", "exchange_price_difference"); !Equal(diff, 6.55) {
		t.Errorf("exchange difference %v", diff)
	}
	call(t, s, "return_delivered_order_items", `{"order_id": "#W9000104", "item_ids": ["3092771847"], "payment_method_id": "gift_card_2209457"}`)
	if st := field(t, s, "orders", "#W9000104", "status"); st != "return requested" {
		t.Errorf("return status %v", st)
	}
	out = call(t, s, "modify_user_address", `{"user_id": "lena_okafor_5530", "address1": "1 Elm St", "address2": "", "city": "Salem", "state": "OR", "country": "USA", "zip": "97301"}`)
	if !strings.Contains(out, `"address": {"address1": "1 Elm St", "address2": "", "city": "Salem", "state": "OR", "country": "USA", "zip": "97301"}`) {
		t.Errorf("user address: %.300s", out)
	}
	s2 := d.NewSession()
	call(t, s2, "modify_pending_order_payment", `{"order_id": "#W9000105", "payment_method_id": "credit_card_6650273"}`)
	if bal := field(t, s2, "users", "tomas_reyes_2718", "payment_methods", "gift_card_4471180", "balance"); !Equal(bal, 283.59) {
		t.Errorf("old gift card credited to %v", bal)
	}
	call(t, s2, "modify_pending_order_address", `{"order_id": "#W9000105", "address1": "5 Oak Ave", "address2": "", "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"}`)
	if d.NewSession().Fingerprint() != base {
		t.Error("sessions leaked writes into the base")
	}
}
