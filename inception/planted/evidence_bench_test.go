package planted

import "testing"

// BenchmarkEvidenceMisuse is the rules module's check of one span against
// an airline-sized catalogue.
func BenchmarkEvidenceMisuse(b *testing.B) {
	tools := []string{"ambiguity_report", "transfer_to_human_agents", "book_reservation", "calculate",
		"cancel_reservation", "get_reservation_details", "get_user_details", "list_all_airports",
		"search_direct_flight", "search_onestop_flight", "send_certificate", "think",
		"update_reservation_baggages", "update_reservation_flights", "update_reservation_passengers"}
	b.ReportAllocs()
	for b.Loop() {
		if EvidenceMisuse("I want to change that one to the earlier flight", tools) != "" {
			b.Fatal("a plain span was refused")
		}
	}
}
