package taubench

import (
	"fmt"
	"strconv"
	"strings"
)

// The 14 airline tools (SPEC §5), in the reference's order.
func airlineTools() []*toolSpec {
	return []*toolSpec{
		{name: "book_reservation", params: []string{"user_id", "origin", "destination", "flight_type", "cabin", "flights", "passengers", "payment_methods", "total_baggages", "nonfree_baggages", "insurance"}, fn: bookReservation},
		{name: "calculate", params: []string{"expression"}, fn: calculateTool},
		{name: "cancel_reservation", params: []string{"reservation_id"}, fn: cancelReservation},
		{name: "get_reservation_details", params: []string{"reservation_id"}, fn: getReservationDetails},
		{name: "get_user_details", params: []string{"user_id"}, fn: getUserDetails},
		{name: "list_all_airports", fn: listAllAirports},
		{name: "search_direct_flight", params: []string{"origin", "destination", "date"}, fn: searchDirectFlight},
		{name: "search_onestop_flight", params: []string{"origin", "destination", "date"}, fn: searchOnestopFlight},
		{name: "send_certificate", params: []string{"user_id", "amount"}, fn: sendCertificate},
		{name: "think", params: []string{"thought"}, fn: think},
		{name: "transfer_to_human_agents", params: []string{"summary"}, fn: transferToHuman},
		{name: "update_reservation_baggages", params: []string{"reservation_id", "total_baggages", "nonfree_baggages", "payment_id"}, fn: updateReservationBaggages},
		{name: "update_reservation_flights", params: []string{"reservation_id", "cabin", "flights", "payment_id"}, fn: updateReservationFlights},
		{name: "update_reservation_passengers", params: []string{"reservation_id", "passengers"}, fn: updateReservationPassengers},
	}
}

func arg(a *Object, k string) any { v, _ := a.Get(k); return v }

// lookup finds a record by an argument value used as a dict key.
func (s *Session) lookup(t int, key any) (string, bool, error) {
	k, ok, err := dictKey(key)
	if err != nil || !ok {
		return "", false, err
	}
	return k, s.has(t, k), nil
}

// require is lookup for the tools: the key's record id, or the tool error
// notFound when the table has no such record.
func (s *Session) require(t int, key any, notFound string) (string, error) {
	k, ok, err := s.lookup(t, key)
	if err != nil {
		return "", pyErr(err)
	}
	if !ok {
		return "", toolErr(notFound)
	}
	return k, nil
}

func think(*Session, *Object) (string, error) { return "", nil }

func transferToHuman(*Session, *Object) (string, error) { return "Transfer successful", nil }

func calculateTool(_ *Session, a *Object) (string, error) {
	expr, ok := arg(a, "expression").(string)
	if !ok {
		return "", toolErr(fmt.Sprintf("'%s' object is not iterable", pyTypeName(arg(a, "expression"))))
	}
	out, err := Calculate(expr)
	if err != nil {
		return "", toolErr(err.Error())
	}
	return out, nil
}

var airports = NewObject(
	"SFO", "San Francisco", "JFK", "New York", "LAX", "Los Angeles", "ORD", "Chicago",
	"DFW", "Dallas", "DEN", "Denver", "SEA", "Seattle", "ATL", "Atlanta", "MIA", "Miami",
	"BOS", "Boston", "PHX", "Phoenix", "IAH", "Houston", "LAS", "Las Vegas", "MCO", "Orlando",
	"EWR", "Newark", "CLT", "Charlotte", "MSP", "Minneapolis", "DTW", "Detroit",
	"PHL", "Philadelphia", "LGA", "LaGuardia")

func listAllAirports(*Session, *Object) (string, error) { return jsonResult(airports) }

func getUserDetails(s *Session, a *Object) (string, error) {
	id, err := s.require(tUsers, arg(a, "user_id"), "user not found")
	if err != nil {
		return "", err
	}
	u, _ := s.get(tUsers, id)
	return jsonResult(u)
}

func getReservationDetails(s *Session, a *Object) (string, error) {
	id, err := s.require(tReservations, arg(a, "reservation_id"), "user not found") // sic: the reference's message
	if err != nil {
		return "", err
	}
	r, _ := s.get(tReservations, id)
	return jsonResult(r)
}

func cancelReservation(s *Session, a *Object) (string, error) {
	id, err := s.require(tReservations, arg(a, "reservation_id"), "reservation not found")
	if err != nil {
		return "", err
	}
	cur, _ := s.getObj(tReservations, id)
	hist, err := path(cur, "payment_history")
	if err != nil {
		return "", pyErr(err)
	}
	payments, err := list(hist)
	if err != nil {
		return "", pyErr(err)
	}
	refunds := make([]any, 0, len(payments))
	for _, p := range payments {
		pid, err := item(p, "payment_id")
		if err != nil {
			return "", pyErr(err)
		}
		amt, err := item(p, "amount")
		if err != nil {
			return "", pyErr(err)
		}
		neg, err := pyNeg(amt)
		if err != nil {
			return "", pyErr(err)
		}
		refunds = append(refunds, NewObject("payment_id", pid, "amount", neg))
	}
	r, _ := s.mut(tReservations, id)
	ph, _ := r.Get("payment_history")
	r.Set("payment_history", append(ph.([]any), refunds...))
	r.Set("status", "cancelled")
	return jsonResult(r)
}

// flightDay validates one requested segment as booking does and returns the
// flight record and its day entry.
func (s *Session) flightDay(seg any, cabin any, n int) (flight *Object, day any, err error) {
	num, err := item(seg, "flight_number")
	if err != nil {
		return nil, nil, pyErr(err)
	}
	id, found, err := s.lookup(tFlights, num)
	if err != nil {
		return nil, nil, pyErr(err)
	}
	if !found {
		return nil, nil, toolErr(fmt.Sprintf("flight %s not found", pyStr(num)))
	}
	flight, _ = s.getObj(tFlights, id)
	date, err := item(seg, "date")
	if err != nil {
		return nil, nil, pyErr(err)
	}
	dates, err := item(flight, "dates")
	if err != nil {
		return nil, nil, pyErr(err)
	}
	has, err := in(date, dates)
	if err != nil {
		return nil, nil, pyErr(err)
	}
	if !has {
		return nil, nil, toolErr(fmt.Sprintf("flight %s not found on date %s", pyStr(num), pyStr(date)))
	}
	day, _ = itemKey(dates, date)
	status, err := item(day, "status")
	if err != nil {
		return nil, nil, pyErr(err)
	}
	if !pyEq(status, "available") {
		return nil, nil, toolErr(fmt.Sprintf("flight %s not available on date %s", pyStr(num), pyStr(date)))
	}
	seats, err := item(day, "available_seats")
	if err != nil {
		return nil, nil, pyErr(err)
	}
	left, err := itemKey(seats, cabin)
	if err != nil {
		return nil, nil, pyErr(err)
	}
	less, err := pyLess(left, int64(n))
	if err != nil {
		return nil, nil, pyErr(err)
	}
	if less {
		return nil, nil, toolErr(fmt.Sprintf("not enough seats on flight %s", pyStr(num)))
	}
	return flight, day, nil
}

// priceSegment sets price, origin and destination on a segment copy and
// returns price × n.
func priceSegment(seg *Object, flight *Object, day any, cabin any, n int) (any, error) {
	prices, err := item(day, "prices")
	if err != nil {
		return nil, err
	}
	price, err := itemKey(prices, cabin)
	if err != nil {
		return nil, err
	}
	seg.Set("price", price)
	o, _ := flight.Get("origin")
	d, _ := flight.Get("destination")
	seg.Set("origin", o)
	seg.Set("destination", d)
	return pyMul(price, int64(n))
}

func bookReservation(s *Session, a *Object) (string, error) {
	userID, err := s.require(tUsers, arg(a, "user_id"), "user not found")
	if err != nil {
		return "", err
	}
	resID := "HATHAV"
	for _, id := range []string{"HATHAT", "HATHAU"} {
		if !s.has(tReservations, id) {
			resID = id
			break
		}
	}
	passengers := arg(a, "passengers")
	n, err := pyLen(passengers)
	if err != nil {
		return "", pyErr(err)
	}
	flights, err := list(DeepCopy(arg(a, "flights")))
	if err != nil {
		return "", pyErr(err)
	}
	cabin := arg(a, "cabin")
	res := NewObject(
		"reservation_id", resID, "user_id", userID, "origin", arg(a, "origin"),
		"destination", arg(a, "destination"), "flight_type", arg(a, "flight_type"), "cabin", cabin,
		"flights", flights, "passengers", passengers, "payment_history", arg(a, "payment_methods"),
		"created_at", "2024-05-15T15:00:00", "total_baggages", arg(a, "total_baggages"),
		"nonfree_baggages", arg(a, "nonfree_baggages"), "insurance", arg(a, "insurance"))
	var total any = int64(0)
	for _, segv := range flights {
		flight, day, err := s.flightDay(segv, cabin, n)
		if err != nil {
			return "", err
		}
		seg := segv.(*Object) // flightDay checked it is a dict
		cost, err := priceSegment(seg, flight, day, cabin, n)
		if err != nil {
			return "", pyErr(err)
		}
		if total, err = pyAdd(total, cost); err != nil {
			return "", pyErr(err)
		}
	}
	if pyEq(arg(a, "insurance"), "yes") {
		if total, err = pyAdd(total, int64(30*n)); err != nil {
			return "", pyErr(err)
		}
	}
	bagFee, err := pyMul(int64(50), arg(a, "nonfree_baggages"))
	if err != nil {
		return "", pyErr(err)
	}
	if total, err = pyAdd(total, bagFee); err != nil {
		return "", pyErr(err)
	}
	user, _ := s.getObj(tUsers, userID)
	methods, err := item(user, "payment_methods")
	if err != nil {
		return "", pyErr(err)
	}
	payments, err := list(arg(a, "payment_methods"))
	if err != nil {
		return "", pyErr(err)
	}
	for _, p := range payments {
		pid, err := item(p, "payment_id")
		if err != nil {
			return "", pyErr(err)
		}
		amt, err := item(p, "amount")
		if err != nil {
			return "", pyErr(err)
		}
		has, err := in(pid, methods)
		if err != nil {
			return "", pyErr(err)
		}
		if !has {
			return "", toolErr(fmt.Sprintf("payment method %s not found", pyStr(pid)))
		}
		m, _ := itemKey(methods, pid)
		src, err := item(m, "source")
		if err != nil {
			return "", pyErr(err)
		}
		if pyEq(src, "gift_card") || pyEq(src, "certificate") {
			bal, err := item(m, "amount")
			if err != nil {
				return "", pyErr(err)
			}
			less, err := pyLess(bal, amt)
			if err != nil {
				return "", pyErr(err)
			}
			if less {
				return "", toolErr(fmt.Sprintf("not enough balance in payment method %s", pyStr(pid)))
			}
		}
	}
	var paid any = int64(0)
	for _, p := range payments {
		amt, _ := item(p, "amount")
		if paid, err = pyAdd(paid, amt); err != nil {
			return "", pyErr(err)
		}
	}
	if !pyEq(paid, total) {
		return "", toolErr(fmt.Sprintf("payment amount does not add up, total price is %s, but paid %s", pyStr(total), pyStr(paid)))
	}
	// Commit. A certificate listed twice fails on its second use after the
	// first was deleted, as in the reference (the user keeps the changes).
	u, _ := s.mut(tUsers, userID)
	pmv, _ := u.Get("payment_methods")
	pm := pmv.(*Object)
	for _, p := range payments {
		pid, _ := item(p, "payment_id")
		amt, _ := item(p, "amount")
		key, _, _ := dictKey(pid)
		mv, ok := pm.Get(key)
		if !ok {
			return "", toolErr(string(appendRepr(nil, pid)))
		}
		src, _ := item(mv, "source")
		switch {
		case pyEq(src, "gift_card"):
			m := mv.(*Object)
			bal, _ := m.Get("amount")
			nb, err := pySub(bal, amt)
			if err != nil {
				return "", pyErr(err)
			}
			m.Set("amount", nb)
		case pyEq(src, "certificate"):
			pm.Delete(key)
		}
	}
	s.put(tReservations, resID, res)
	resList, err := list(arg(u, "reservations"))
	if err != nil {
		return "", pyErr(err)
	}
	u.Set("reservations", append(resList, resID))
	return jsonResult(res)
}

func searchDirectFlight(s *Session, a *Object) (string, error) {
	origin, dest, date := arg(a, "origin"), arg(a, "destination"), arg(a, "date")
	results := []any{}
	var ferr error
	s.eachFlightFrom(origin, func(f *Object) bool {
		fd, _ := f.Get("destination")
		if !pyEq(fd, dest) {
			return true
		}
		dates, _ := f.Get("dates")
		has, err := in(date, dates)
		if err != nil {
			ferr = err
			return false
		}
		if !has {
			return true
		}
		day, _ := itemKey(dates, date)
		if st, _ := item(day, "status"); !pyEq(st, "available") {
			return true
		}
		results = append(results, flightView(f, day))
		return true
	})
	if ferr != nil {
		return "", pyErr(ferr)
	}
	return jsonResult(results)
}

// eachFlightFrom visits the flights departing from origin in table order:
// through the base index when the session has no flight overlay (tools
// never write flights), by a scan otherwise.
func (s *Session) eachFlightFrom(origin any, fn func(f *Object) bool) {
	if o, ok := origin.(string); ok && len(s.over[tFlights]) == 0 {
		for _, f := range s.d.flightsFrom(o) {
			if !fn(f) {
				return
			}
		}
		return
	}
	if _, ok := origin.(string); !ok && len(s.over[tFlights]) == 0 {
		return // a non-string origin matches no flight
	}
	s.each(tFlights, func(_ string, rec any) bool {
		f, ok := rec.(*Object)
		if !ok {
			return true
		}
		if fo, _ := f.Get("origin"); !pyEq(fo, origin) {
			return true
		}
		return fn(f)
	})
}

// flightView is a flight without its dates, followed by one day's fields.
func flightView(f *Object, day any) *Object {
	out := &Object{Keys: make([]string, 0, 9), Vals: make([]any, 0, 9)}
	for i, k := range f.Keys {
		if k != "dates" {
			out.Set(k, f.Vals[i])
		}
	}
	if d, ok := day.(*Object); ok {
		for i, k := range d.Keys {
			out.Set(k, d.Vals[i])
		}
	}
	return out
}

// pyIntLiteral parses a string as Python's int() would (base 10).
func pyIntLiteral(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.ReplaceAll(t, "_", "")
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || t == "" || strings.HasPrefix(strings.TrimSpace(s), "_") {
		return 0, fmt.Errorf("invalid literal for int() with base 10: %s", appendPyStrRepr(nil, s))
	}
	return n, nil
}

func searchOnestopFlight(s *Session, a *Object) (string, error) {
	origin, dest, date := arg(a, "origin"), arg(a, "destination"), arg(a, "date")
	results := []any{}
	var ferr error
	s.eachFlightFrom(origin, func(f1 *Object) bool {
		d1, _ := f1.Get("destination")
		s.eachFlightFrom(d1, func(f2 *Object) bool {
			d2, _ := f2.Get("destination")
			if !pyEq(d2, dest) {
				return true
			}
			arr, _ := f1.Get("scheduled_arrival_time_est")
			date2 := date
			plus1, err := contains(arr, "+1")
			if err != nil {
				ferr = err
				return false
			}
			if plus1 {
				ds, ok := date.(string)
				if !ok {
					ferr = fmt.Errorf("'%s' object is not subscriptable", pyTypeName(date))
					return false
				}
				r := []rune(ds)
				tail := string(r[max(0, len(r)-2):])
				day, err := pyIntLiteral(tail)
				if err != nil {
					ferr = err
					return false
				}
				date2 = "2024-05-" + strconv.FormatInt(day+1, 10)
			}
			dep, _ := f2.Get("scheduled_departure_time_est")
			c, err := pyCmp(">", arr, dep)
			if err != nil {
				ferr = err
				return false
			}
			if c > 0 {
				return true
			}
			dates1, _ := f1.Get("dates")
			dates2, _ := f2.Get("dates")
			in1, err := in(date, dates1)
			if err != nil {
				ferr = err
				return false
			}
			in2, err := in(date2, dates2)
			if err != nil {
				ferr = err
				return false
			}
			if !in1 || !in2 {
				return true
			}
			day1, _ := itemKey(dates1, date)
			day2, _ := itemKey(dates2, date2)
			st1, _ := item(day1, "status")
			st2, _ := item(day2, "status")
			if !pyEq(st1, "available") || !pyEq(st2, "available") {
				return true
			}
			leg1 := flightView(f1, day1)
			leg1.Set("date", date)
			shown, err := itemKey(dates2, date) // the first leg's day, as the reference does
			if err != nil {
				ferr = err
				return false
			}
			leg2 := flightView(f2, shown)
			leg2.Set("date", date2)
			results = append(results, []any{leg1, leg2})
			return true
		})
		return ferr == nil
	})
	if ferr != nil {
		return "", pyErr(ferr)
	}
	return jsonResult(results)
}

func sendCertificate(s *Session, a *Object) (string, error) {
	userID, err := s.require(tUsers, arg(a, "user_id"), "user not found")
	if err != nil {
		return "", err
	}
	cur, _ := s.getObj(tUsers, userID)
	methods, err := item(cur, "payment_methods")
	if err != nil {
		return "", pyErr(err)
	}
	amount := arg(a, "amount")
	for _, id := range []string{"certificate_3221322", "certificate_3221323", "certificate_3221324"} {
		if has, _ := in(id, methods); has {
			continue
		}
		u, _ := s.mut(tUsers, userID)
		pm, _ := u.Get("payment_methods")
		pm.(*Object).Set(id, NewObject("source", "certificate", "amount", amount, "id", id))
		return fmt.Sprintf("Certificate %s added to user %s with amount %s.", id, userID, pyStr(amount)), nil
	}
	// The reference returns None here, which aborts its episode.
	return "", toolErr("the user already holds all three compensation certificates")
}

// ownerMethod resolves a payment id among the methods of the user who owns
// a record (an airline reservation or a retail order), with the checks and
// error texts both domains' update tools share.
func (s *Session) ownerMethod(res *Object, pid any) (userID string, method *Object, err error) {
	uid, err := item(res, "user_id")
	if err != nil {
		return "", nil, pyErr(err)
	}
	userID, _, err = dictKey(uid)
	if err != nil {
		return "", nil, pyErr(err)
	}
	user, ok := s.getObj(tUsers, userID)
	if !ok {
		return "", nil, pyErr(fmt.Errorf("%s", appendRepr(nil, uid)))
	}
	methods, err := item(user, "payment_methods")
	if err != nil {
		return "", nil, pyErr(err)
	}
	has, err := in(pid, methods)
	if err != nil {
		return "", nil, pyErr(err)
	}
	if !has {
		return "", nil, toolErr("payment method not found")
	}
	mv, _ := itemKey(methods, pid)
	m, ok := mv.(*Object)
	if !ok {
		return "", nil, pyErr(notSubscriptable(mv))
	}
	return userID, m, nil
}

// checkUpdatePayment refuses certificates and short gift cards.
func checkUpdatePayment(m *Object, amount any) error {
	src, _ := m.Get("source")
	if pyEq(src, "certificate") {
		return toolErr("certificate cannot be used to update reservation")
	}
	if pyEq(src, "gift_card") {
		bal, err := item(m, "amount")
		if err != nil {
			return pyErr(err)
		}
		less, err := pyLess(bal, amount)
		if err != nil {
			return pyErr(err)
		}
		if less {
			return toolErr("gift card balance is not enough")
		}
	}
	return nil
}

// chargeGiftCard subtracts amount from the owner's gift card (if it is one).
func (s *Session) chargeGiftCard(userID string, pid any, amount any) error {
	key, _, _ := dictKey(pid)
	u, _ := s.getObj(tUsers, userID)
	pm, _ := item(u, "payment_methods")
	mv, _ := itemKey(pm, key)
	if src, _ := item(mv, "source"); !pyEq(src, "gift_card") {
		return nil
	}
	bal, _ := item(mv, "amount")
	nb, err := pySub(bal, amount)
	if err != nil {
		return pyErr(err)
	}
	uw, _ := s.mut(tUsers, userID)
	pmw, _ := uw.Get("payment_methods")
	mw, _ := pmw.(*Object).Get(key)
	mw.(*Object).Set("amount", nb)
	return nil
}

func updateReservationBaggages(s *Session, a *Object) (string, error) {
	id, err := s.require(tReservations, arg(a, "reservation_id"), "reservation not found")
	if err != nil {
		return "", err
	}
	cur, _ := s.getObj(tReservations, id)
	stored, err := item(cur, "nonfree_baggages")
	if err != nil {
		return "", pyErr(err)
	}
	extra, err := pySub(arg(a, "nonfree_baggages"), stored)
	if err != nil {
		return "", pyErr(err)
	}
	var more any = int64(0) // max(0, extra) keeps the first argument on ties
	if gt, err := pyCmp(">", extra, int64(0)); err != nil {
		return "", pyErr(err)
	} else if gt > 0 {
		more = extra
	}
	fee, err := pyMul(int64(50), more)
	if err != nil {
		return "", pyErr(err)
	}
	pid := arg(a, "payment_id")
	userID, m, err := s.ownerMethod(cur, pid)
	if err != nil {
		return "", err
	}
	if err := checkUpdatePayment(m, fee); err != nil {
		return "", err
	}
	if err := s.chargeGiftCard(userID, pid, fee); err != nil {
		return "", err
	}
	r, _ := s.mut(tReservations, id)
	r.Set("total_baggages", arg(a, "total_baggages"))
	r.Set("nonfree_baggages", arg(a, "nonfree_baggages"))
	if !pyEq(fee, int64(0)) {
		if err := appendPayment(r, NewObject("payment_id", pid, "amount", fee)); err != nil {
			return "", err
		}
	}
	return jsonResult(r)
}

func appendPayment(r *Object, p *Object) error {
	ph, err := list(arg(r, "payment_history"))
	if err != nil {
		return pyErr(err)
	}
	r.Set("payment_history", append(ph, p))
	return nil
}

func updateReservationFlights(s *Session, a *Object) (string, error) {
	id, err := s.require(tReservations, arg(a, "reservation_id"), "reservation not found")
	if err != nil {
		return "", err
	}
	cur, _ := s.getObj(tReservations, id)
	n, err := pyLen(arg(cur, "passengers"))
	if err != nil {
		return "", pyErr(err)
	}
	curFlights, err := list(arg(cur, "flights"))
	if err != nil {
		return "", pyErr(err)
	}
	cabin := arg(a, "cabin")
	newFlights, err := list(DeepCopy(arg(a, "flights")))
	if err != nil {
		return "", pyErr(err)
	}
	var total any = int64(0)
	for _, segv := range newFlights {
		seg, ok := segv.(*Object)
		if !ok {
			return "", pyErr(notSubscriptable(segv))
		}
		var reuse *Object
		if pyEq(cabin, arg(cur, "cabin")) {
			num, err := item(seg, "flight_number")
			if err != nil {
				return "", pyErr(err)
			}
			date, err := item(seg, "date")
			if err != nil {
				return "", pyErr(err)
			}
			for _, f := range curFlights {
				fo, ok := f.(*Object)
				if ok && pyEq(arg(fo, "flight_number"), num) && pyEq(arg(fo, "date"), date) {
					reuse = fo
					break
				}
			}
		}
		if reuse != nil {
			price, err := item(reuse, "price")
			if err != nil {
				return "", pyErr(err)
			}
			cost, err := pyMul(price, int64(n))
			if err != nil {
				return "", pyErr(err)
			}
			if total, err = pyAdd(total, cost); err != nil {
				return "", pyErr(err)
			}
			seg.Set("price", price)
			seg.Set("origin", arg(reuse, "origin"))
			seg.Set("destination", arg(reuse, "destination"))
			continue
		}
		flight, day, err := s.flightDay(seg, cabin, n)
		if err != nil {
			return "", err
		}
		cost, err := priceSegment(seg, flight, day, cabin, n)
		if err != nil {
			return "", pyErr(err)
		}
		if total, err = pyAdd(total, cost); err != nil {
			return "", pyErr(err)
		}
	}
	var old any = int64(0)
	for _, f := range curFlights {
		p, err := item(f, "price")
		if err != nil {
			return "", pyErr(err)
		}
		if old, err = pyAdd(old, p); err != nil {
			return "", pyErr(err)
		}
	}
	oldCost, err := pyMul(old, int64(n))
	if err != nil {
		return "", pyErr(err)
	}
	if total, err = pySub(total, oldCost); err != nil {
		return "", pyErr(err)
	}
	pid := arg(a, "payment_id")
	userID, m, err := s.ownerMethod(cur, pid)
	if err != nil {
		return "", err
	}
	if err := checkUpdatePayment(m, total); err != nil {
		return "", err
	}
	if err := s.chargeGiftCard(userID, pid, total); err != nil {
		return "", err
	}
	r, _ := s.mut(tReservations, id)
	r.Set("flights", newFlights)
	if !pyEq(total, int64(0)) {
		if err := appendPayment(r, NewObject("payment_id", pid, "amount", total)); err != nil {
			return "", err
		}
	}
	return jsonResult(r)
}

func updateReservationPassengers(s *Session, a *Object) (string, error) {
	id, err := s.require(tReservations, arg(a, "reservation_id"), "reservation not found")
	if err != nil {
		return "", err
	}
	cur, _ := s.getObj(tReservations, id)
	newN, err := pyLen(arg(a, "passengers"))
	if err != nil {
		return "", pyErr(err)
	}
	oldN, err := pyLen(arg(cur, "passengers"))
	if err != nil {
		return "", pyErr(err)
	}
	if newN != oldN {
		return "", toolErr("number of passengers does not match")
	}
	r, _ := s.mut(tReservations, id)
	r.Set("passengers", arg(a, "passengers"))
	return jsonResult(r)
}
