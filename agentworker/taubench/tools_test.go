package taubench

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func sample(t testing.TB, name string) *Domain {
	t.Helper()
	d, err := Sample(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type toolCase struct {
	name string
	tool string
	args string
	want string // exact error observation
}

// runErrorCases checks each failing call's exact observation, that it
// matches ErrTool, and that it leaves the database untouched.
func runErrorCases(t *testing.T, d *Domain, cases []toolCase) {
	t.Helper()
	base := d.BaseFingerprint()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := d.NewSession()
			out, err := s.Call(context.Background(), tc.tool, []byte(tc.args))
			if err == nil {
				t.Fatalf("succeeded with %.200s", out)
			}
			if !errors.Is(err, ErrTool) {
				t.Fatalf("error %v does not match ErrTool", err)
			}
			if err.Error() != tc.want {
				t.Errorf("observation %q\nwant        %q", err.Error(), tc.want)
			}
			if got := s.Fingerprint(); got != base {
				t.Errorf("failed call changed the database")
			}
		})
	}
}

func TestAirlineErrors(t *testing.T) {
	d := sample(t, Airline)
	book := func(mod string) string {
		args := map[string]string{
			"user_id": `"nora_quist_4821"`, "origin": `"BOS"`, "destination": `"SEA"`, "flight_type": `"one_way"`,
			"cabin": `"economy"`, "flights": `[{"flight_number": "HAT505", "date": "2024-05-21"}]`,
			"passengers":      `[{"first_name": "Nora", "last_name": "Quist", "dob": "1986-03-14"}]`,
			"payment_methods": `[{"payment_id": "credit_card_4410027", "amount": 199}]`,
			"total_baggages":  `0`, "nonfree_baggages": `0`, "insurance": `"no"`,
		}
		for _, kv := range strings.Split(mod, ";") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				args[k] = v
			}
		}
		var b strings.Builder
		b.WriteString("{")
		first := true
		for _, k := range []string{"user_id", "origin", "destination", "flight_type", "cabin", "flights", "passengers", "payment_methods", "total_baggages", "nonfree_baggages", "insurance"} {
			if args[k] == "-" {
				continue
			}
			if !first {
				b.WriteString(",")
			}
			first = false
			b.WriteString(`"` + k + `":` + args[k])
		}
		return b.String() + "}"
	}
	runErrorCases(t, d, []toolCase{
		{"book unknown user", "book_reservation", book(`user_id="nobody_1"`), "Error: user not found"},
		{"book unknown flight", "book_reservation", book(`flights=[{"flight_number": "HAT999", "date": "2024-05-21"}]`), "Error: flight HAT999 not found"},
		{"book unknown date", "book_reservation", book(`flights=[{"flight_number": "HAT505", "date": "2024-06-01"}]`), "Error: flight HAT505 not found on date 2024-06-01"},
		{"book flown date", "book_reservation", book(`flights=[{"flight_number": "HAT505", "date": "2024-05-12"}]`), "Error: flight HAT505 not available on date 2024-05-12"},
		{"book no seats", "book_reservation", book(`flights=[{"flight_number": "HAT503", "date": "2024-05-20"}];passengers=[{"first_name":"A","last_name":"B","dob":"2000-01-01"},{"first_name":"C","last_name":"D","dob":"2000-01-01"}]`), "Error: not enough seats on flight HAT503"},
		{"book unknown cabin", "book_reservation", book(`cabin="first"`), "Error: 'first'"},
		{"book unknown payment", "book_reservation", book(`payment_methods=[{"payment_id": "credit_card_0000000", "amount": 199}]`), "Error: payment method credit_card_0000000 not found"},
		{"book gift card short", "book_reservation", book(`payment_methods=[{"payment_id": "gift_card_9930145", "amount": 199}]`), "Error: not enough balance in payment method gift_card_9930145"},
		{"book wrong total", "book_reservation", book(`payment_methods=[{"payment_id": "credit_card_4410027", "amount": 150.5}]`), "Error: payment amount does not add up, total price is 217, but paid 150.5"},
		{"book missing argument", "book_reservation", book(`insurance=-`), "Error: BookReservation.invoke() missing 1 required positional argument: 'insurance'"},
		{"book extra argument", "book_reservation", book(`insurance="no","seat":"12A"`), "Error: BookReservation.invoke() got an unexpected keyword argument 'seat'"},
		{"calculate bad characters", "calculate", `{"expression": "2^3"}`, "Error: invalid characters in expression"},
		{"calculate division by zero", "calculate", `{"expression": "1 / 0"}`, "Error: division by zero"},
		{"calculate syntax", "calculate", `{"expression": "2 +"}`, "Error: invalid syntax (<string>, line 1)"},
		{"cancel unknown", "cancel_reservation", `{"reservation_id": "ZZZZZZ"}`, "Error: reservation not found"},
		{"details unknown", "get_reservation_details", `{"reservation_id": "ZZZZZZ"}`, "Error: user not found"},
		{"user unknown", "get_user_details", `{"user_id": "nobody_1"}`, "Error: user not found"},
		{"user missing args", "get_user_details", `{}`, "Error: GetUserDetails.invoke() missing 1 required positional argument: 'user_id'"},
		{"certificate unknown user", "send_certificate", `{"user_id": "nobody_1", "amount": 100}`, "Error: user not found"},
		{"bags unknown reservation", "update_reservation_baggages", `{"reservation_id": "ZZZZZZ", "total_baggages": 2, "nonfree_baggages": 1, "payment_id": "credit_card_4410027"}`, "Error: reservation not found"},
		{"bags unknown payment", "update_reservation_baggages", `{"reservation_id": "Q7RM2K", "total_baggages": 2, "nonfree_baggages": 1, "payment_id": "credit_card_7281934"}`, "Error: payment method not found"},
		{"bags certificate", "update_reservation_baggages", `{"reservation_id": "M2VT9Q", "total_baggages": 2, "nonfree_baggages": 1, "payment_id": "certificate_5520718"}`, "Error: certificate cannot be used to update reservation"},
		{"bags gift card short", "update_reservation_baggages", `{"reservation_id": "Q7RM2K", "total_baggages": 5, "nonfree_baggages": 4, "payment_id": "gift_card_9930145"}`, "Error: gift card balance is not enough"},
		{"flights unknown reservation", "update_reservation_flights", `{"reservation_id": "ZZZZZZ", "cabin": "economy", "flights": [], "payment_id": "credit_card_4410027"}`, "Error: reservation not found"},
		{"flights unknown flight", "update_reservation_flights", `{"reservation_id": "Q7RM2K", "cabin": "economy", "flights": [{"flight_number": "HAT000", "date": "2024-05-21"}], "payment_id": "credit_card_4410027"}`, "Error: flight HAT000 not found"},
		{"flights not available", "update_reservation_flights", `{"reservation_id": "Q7RM2K", "cabin": "business", "flights": [{"flight_number": "HAT505", "date": "2024-05-15"}], "payment_id": "credit_card_4410027"}`, "Error: flight HAT505 not available on date 2024-05-15"},
		{"flights unknown payment", "update_reservation_flights", `{"reservation_id": "Q7RM2K", "cabin": "business", "flights": [{"flight_number": "HAT505", "date": "2024-05-20"}], "payment_id": "paypal_1"}`, "Error: payment method not found"},
		{"flights certificate", "update_reservation_flights", `{"reservation_id": "M2VT9Q", "cabin": "economy", "flights": [{"flight_number": "HAT503", "date": "2024-05-17"}, {"flight_number": "HAT504", "date": "2024-05-24"}], "payment_id": "certificate_5520718"}`, "Error: certificate cannot be used to update reservation"},
		{"flights gift card short", "update_reservation_flights", `{"reservation_id": "Q7RM2K", "cabin": "business", "flights": [{"flight_number": "HAT505", "date": "2024-05-20"}], "payment_id": "gift_card_9930145"}`, "Error: gift card balance is not enough"},
		{"passengers unknown reservation", "update_reservation_passengers", `{"reservation_id": "ZZZZZZ", "passengers": []}`, "Error: reservation not found"},
		{"passengers count", "update_reservation_passengers", `{"reservation_id": "Q7RM2K", "passengers": []}`, "Error: number of passengers does not match"},
		{"unknown tool", "book_hotel", `{}`, "Unknown action book_hotel"},
		{"arguments not an object", "think", `[1]`, "Error: argument after ** must be a mapping, not list"},
	})
}

func TestRetailErrors(t *testing.T) {
	d := sample(t, Retail)
	runErrorCases(t, d, []toolCase{
		{"cancel unknown", "cancel_pending_order", `{"order_id": "#W0000000", "reason": "no longer needed"}`, "Error: order not found"},
		{"cancel not pending", "cancel_pending_order", `{"order_id": "#W9000102", "reason": "no longer needed"}`, "Error: non-pending order cannot be cancelled"},
		{"cancel bad reason", "cancel_pending_order", `{"order_id": "#W9000101", "reason": "too slow"}`, "Error: invalid reason"},
		{"exchange unknown", "exchange_delivered_order_items", `{"order_id": "#W0000000", "item_ids": [], "new_item_ids": [], "payment_method_id": "paypal_8812046"}`, "Error: order not found"},
		{"exchange not delivered", "exchange_delivered_order_items", `{"order_id": "#W9000101", "item_ids": [], "new_item_ids": [], "payment_method_id": "paypal_8812046"}`, "Error: non-delivered order cannot be exchanged"},
		{"exchange missing item", "exchange_delivered_order_items", `{"order_id": "#W9000103", "item_ids": ["9004518826", "9004518826"], "new_item_ids": ["9004518827", "9004518827"], "payment_method_id": "paypal_8812046"}`, "Error: 9004518826 not found"},
		{"exchange count", "exchange_delivered_order_items", `{"order_id": "#W9000103", "item_ids": ["9004518826"], "new_item_ids": [], "payment_method_id": "paypal_8812046"}`, "Error: the number of items to be exchanged should match"},
		{"exchange other product", "exchange_delivered_order_items", `{"order_id": "#W9000103", "item_ids": ["9004518826"], "new_item_ids": ["7718204463"], "payment_method_id": "paypal_8812046"}`, "Error: new item 7718204463 not found or available"},
		{"exchange unavailable", "exchange_delivered_order_items", `{"order_id": "#W9000104", "item_ids": ["3092771847"], "new_item_ids": ["3092771848"], "payment_method_id": "paypal_8812046"}`, "Error: new item 3092771848 not found or available"},
		{"exchange unknown payment", "exchange_delivered_order_items", `{"order_id": "#W9000103", "item_ids": ["9004518826"], "new_item_ids": ["9004518827"], "payment_method_id": "gift_card_4471180"}`, "Error: payment method not found"},
		{"exchange gift card short", "exchange_delivered_order_items", `{"order_id": "#W9000103", "item_ids": ["9004518826"], "new_item_ids": ["9004518827"], "payment_method_id": "gift_card_2209457"}`, "Error: insufficient gift card balance to pay for the price difference"},
		{"email unknown", "find_user_id_by_email", `{"email": "nobody@example.com"}`, "Error: user not found"},
		{"name zip unknown", "find_user_id_by_name_zip", `{"first_name": "Lena", "last_name": "Okafor", "zip": "00000"}`, "Error: user not found"},
		{"order unknown", "get_order_details", `{"order_id": "W9000101"}`, "Error: order not found"},
		{"product unknown", "get_product_details", `{"product_id": "3092771845"}`, "Error: product not found"},
		{"user unknown", "get_user_details", `{"user_id": "nobody_1"}`, "Error: user not found"},
		{"address unknown order", "modify_pending_order_address", `{"order_id": "#W0000000", "address1": "a", "address2": "", "city": "c", "state": "s", "country": "USA", "zip": "1"}`, "Error: order not found"},
		{"address not pending", "modify_pending_order_address", `{"order_id": "#W9000103", "address1": "a", "address2": "", "city": "c", "state": "s", "country": "USA", "zip": "1"}`, "Error: non-pending order cannot be modified"},
		{"items not pending", "modify_pending_order_items", `{"order_id": "#W9000104", "item_ids": [], "new_item_ids": [], "payment_method_id": "paypal_8812046"}`, "Error: non-pending order cannot be modified"},
		{"items missing item", "modify_pending_order_items", `{"order_id": "#W9000101", "item_ids": ["9004518826"], "new_item_ids": ["9004518827"], "payment_method_id": "paypal_8812046"}`, "Error: 9004518826 not found"},
		{"items count", "modify_pending_order_items", `{"order_id": "#W9000101", "item_ids": ["7718204463"], "new_item_ids": ["7718204464", "7718204465"], "payment_method_id": "paypal_8812046"}`, "Error: the number of items to be exchanged should match"},
		{"items unavailable", "modify_pending_order_items", `{"order_id": "#W9000101", "item_ids": ["3092771845"], "new_item_ids": ["3092771848"], "payment_method_id": "paypal_8812046"}`, "Error: new item 3092771848 not found or available"},
		{"items unknown payment", "modify_pending_order_items", `{"order_id": "#W9000101", "item_ids": ["3092771845"], "new_item_ids": ["3092771846"], "payment_method_id": "gift_card_4471180"}`, "Error: payment method not found"},
		{"items gift card short", "modify_pending_order_items", `{"order_id": "#W9000101", "item_ids": ["3092771845"], "new_item_ids": ["3092771846"], "payment_method_id": "gift_card_2209457"}`, "Error: insufficient gift card balance to pay for the new item"},
		{"payment not pending", "modify_pending_order_payment", `{"order_id": "#W9000102", "payment_method_id": "credit_card_3340912"}`, "Error: non-pending order cannot be modified"},
		{"payment unknown method", "modify_pending_order_payment", `{"order_id": "#W9000101", "payment_method_id": "gift_card_4471180"}`, "Error: payment method not found"},
		{"payment same method", "modify_pending_order_payment", `{"order_id": "#W9000101", "payment_method_id": "credit_card_3340912"}`, "Error: the new payment method should be different from the current one"},
		{"payment gift card short", "modify_pending_order_payment", `{"order_id": "#W9000101", "payment_method_id": "gift_card_2209457"}`, "Error: insufficient gift card balance to pay for the order"},
		{"user address unknown", "modify_user_address", `{"user_id": "nobody_1", "address1": "a", "address2": "", "city": "c", "state": "s", "country": "USA", "zip": "1"}`, "Error: user not found"},
		{"return unknown", "return_delivered_order_items", `{"order_id": "#W0000000", "item_ids": [], "payment_method_id": "paypal_8812046"}`, "Error: order not found"},
		{"return not delivered", "return_delivered_order_items", `{"order_id": "#W9000102", "item_ids": [], "payment_method_id": "paypal_8812046"}`, "Error: non-delivered order cannot be returned"},
		{"return unknown method", "return_delivered_order_items", `{"order_id": "#W9000104", "item_ids": ["3092771847"], "payment_method_id": "gift_card_4471180"}`, "Error: payment method not found"},
		{"return other method", "return_delivered_order_items", `{"order_id": "#W9000104", "item_ids": ["3092771847"], "payment_method_id": "paypal_8812046"}`, "Error: payment method should be either the original payment method or a gift card"},
		{"return missing item", "return_delivered_order_items", `{"order_id": "#W9000104", "item_ids": ["3092771847", "3092771847"], "payment_method_id": "credit_card_3340912"}`, "Error: some item not found"},
		{"unexpected argument", "get_order_details", `{"order_id": "#W9000101", "verbose": true}`, "Error: GetOrderDetails.invoke() got an unexpected keyword argument 'verbose'"},
		{"missing arguments", "find_user_id_by_name_zip", `{"zip": "97205"}`, "Error: FindUserIdByNameZip.invoke() missing 2 required positional arguments: 'first_name' and 'last_name'"},
		{"unknown tool", "add_to_wishlist", `{}`, "Unknown action add_to_wishlist"},
	})
}

func TestUnknownToolIsErrUnknownTool(t *testing.T) {
	s := sample(t, Retail).NewSession()
	_, err := s.Call(context.Background(), "nope", nil)
	if !errors.Is(err, ErrUnknownTool) || !errors.Is(err, ErrTool) {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.Call(context.Background(), "think", []byte(`{"thought": "x"}`)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Call(ctx, "think", []byte(`{"thought": "x"}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
}
