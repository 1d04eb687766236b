package taubench

import (
	"fmt"
	"sort"
	"strings"
)

// The 16 retail tools (SPEC §6), in the reference's order.
func retailTools() []*toolSpec {
	addr := []string{"address1", "address2", "city", "state", "country", "zip"}
	return []*toolSpec{
		{name: "calculate", params: []string{"expression"}, fn: calculateTool},
		{name: "cancel_pending_order", params: []string{"order_id", "reason"}, fn: cancelPendingOrder},
		{name: "exchange_delivered_order_items", params: []string{"order_id", "item_ids", "new_item_ids", "payment_method_id"}, fn: exchangeDeliveredOrderItems},
		{name: "find_user_id_by_email", params: []string{"email"}, fn: findUserIDByEmail},
		{name: "find_user_id_by_name_zip", params: []string{"first_name", "last_name", "zip"}, fn: findUserIDByNameZip},
		{name: "get_order_details", params: []string{"order_id"}, fn: getOrderDetails},
		{name: "get_product_details", params: []string{"product_id"}, fn: getProductDetails},
		{name: "get_user_details", params: []string{"user_id"}, fn: getUserDetails},
		{name: "list_all_product_types", fn: listAllProductTypes},
		{name: "modify_pending_order_address", params: append([]string{"order_id"}, addr...), fn: modifyPendingOrderAddress},
		{name: "modify_pending_order_items", params: []string{"order_id", "item_ids", "new_item_ids", "payment_method_id"}, fn: modifyPendingOrderItems},
		{name: "modify_pending_order_payment", params: []string{"order_id", "payment_method_id"}, fn: modifyPendingOrderPayment},
		{name: "modify_user_address", params: append([]string{"user_id"}, addr...), fn: modifyUserAddress},
		{name: "return_delivered_order_items", params: []string{"order_id", "item_ids", "payment_method_id"}, fn: returnDeliveredOrderItems},
		{name: "think", params: []string{"thought"}, fn: think},
		{name: "transfer_to_human_agents", params: []string{"summary"}, fn: transferToHuman},
	}
}

func pyLower(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("'%s' object has no attribute 'lower'", pyTypeName(v))
	}
	return strings.ToLower(s), nil
}

func findUserIDByEmail(s *Session, a *Object) (string, error) {
	want, err := pyLower(arg(a, "email"))
	var found string
	s.each(tUsers, func(id string, rec any) bool {
		email, e := item(rec, "email")
		if e != nil {
			err = e
			return false
		}
		got, e := pyLower(email)
		if e != nil {
			err = e
			return false
		}
		if err != nil { // the argument's .lower() fails on the first comparison
			return false
		}
		if got == want {
			found = id
			return false
		}
		return true
	})
	if err != nil {
		return "", pyErr(err)
	}
	if found == "" {
		return "", toolErr("user not found")
	}
	return found, nil
}

func findUserIDByNameZip(s *Session, a *Object) (string, error) {
	var found string
	var err error
	s.each(tUsers, func(id string, rec any) bool {
		fn, e1 := path(rec, "name", "first_name")
		ln, e2 := path(rec, "name", "last_name")
		zip, e3 := path(rec, "address", "zip")
		for _, e := range []error{e1, e2, e3} {
			if e != nil {
				err = e
				return false
			}
		}
		f1, e := pyLower(fn)
		if e != nil {
			err = e
			return false
		}
		f2, e := pyLower(arg(a, "first_name"))
		if e != nil {
			err = e
			return false
		}
		if f1 != f2 {
			return true
		}
		l1, e := pyLower(ln)
		if e != nil {
			err = e
			return false
		}
		l2, e := pyLower(arg(a, "last_name"))
		if e != nil {
			err = e
			return false
		}
		if l1 == l2 && pyEq(zip, arg(a, "zip")) {
			found = id
			return false
		}
		return true
	})
	if err != nil {
		return "", pyErr(err)
	}
	if found == "" {
		return "", toolErr("user not found")
	}
	return found, nil
}

func getOrderDetails(s *Session, a *Object) (string, error) {
	id, err := s.require(tOrders, arg(a, "order_id"), "order not found")
	if err != nil {
		return "", err
	}
	o, _ := s.get(tOrders, id)
	return jsonResult(o)
}

func getProductDetails(s *Session, a *Object) (string, error) {
	id, err := s.require(tProducts, arg(a, "product_id"), "product not found")
	if err != nil {
		return "", err
	}
	p, _ := s.get(tProducts, id)
	return jsonResult(p)
}

func listAllProductTypes(s *Session, _ *Object) (string, error) {
	byName := map[string]any{}
	var names []string
	var err error
	s.each(tProducts, func(_ string, rec any) bool {
		nv, e := item(rec, "name")
		if e != nil {
			err = e
			return false
		}
		pid, e := item(rec, "product_id")
		if e != nil {
			err = e
			return false
		}
		n, ok := nv.(string)
		if !ok {
			err = fmt.Errorf("'<' not supported between instances of '%s' and 'str'", pyTypeName(nv))
			return false
		}
		if _, seen := byName[n]; !seen {
			names = append(names, n)
		}
		byName[n] = pid
		return true
	})
	if err != nil {
		return "", pyErr(err)
	}
	sort.Strings(names)
	out := &Object{}
	for _, n := range names {
		out.Set(n, byName[n])
	}
	return jsonResult(out)
}

// pendingOrder resolves an order that must be exactly "pending".
func (s *Session) orderWithStatus(a *Object, status, refusal string) (string, *Object, error) {
	id, ok, err := s.lookup(tOrders, arg(a, "order_id"))
	if err != nil {
		return "", nil, pyErr(err)
	}
	if !ok {
		return "", nil, toolErr("order not found")
	}
	o, _ := s.getObj(tOrders, id)
	st, err := item(o, "status")
	if err != nil {
		return "", nil, pyErr(err)
	}
	if !pyEq(st, status) {
		return "", nil, toolErr(refusal)
	}
	return id, o, nil
}

// adjustBalance adds delta to a user's payment method balance, rounded to
// two decimals (Python round(x, 2)).
func (s *Session) adjustBalance(userID, pid string, delta any, subtract bool) error {
	u, ok := s.mut(tUsers, userID)
	if !ok {
		return pyErr(fmt.Errorf("%s", appendPyStrRepr(nil, userID)))
	}
	pm, err := item(u, "payment_methods")
	if err != nil {
		return pyErr(err)
	}
	mv, err := item(pm, pid)
	if err != nil {
		return pyErr(err)
	}
	m, ok := mv.(*Object)
	if !ok {
		return pyErr(notSubscriptable(mv))
	}
	bal, err := item(m, "balance")
	if err != nil {
		return pyErr(err)
	}
	var nb any
	if subtract {
		nb, err = pySub(bal, delta)
	} else {
		nb, err = pyAdd(bal, delta)
	}
	if err != nil {
		return pyErr(err)
	}
	if nb, err = pyRound2(nb); err != nil {
		return pyErr(err)
	}
	m.Set("balance", nb)
	return nil
}

func cancelPendingOrder(s *Session, a *Object) (string, error) {
	id, cur, err := s.orderWithStatus(a, "pending", "non-pending order cannot be cancelled")
	if err != nil {
		return "", err
	}
	reason := arg(a, "reason")
	if !pyEq(reason, "no longer needed") && !pyEq(reason, "ordered by mistake") {
		return "", toolErr("invalid reason")
	}
	hist, err := list(arg(cur, "payment_history"))
	if err != nil {
		return "", pyErr(err)
	}
	uid, _ := cur.Get("user_id")
	userID, _ := uid.(string)
	refunds := make([]any, 0, len(hist))
	for _, p := range hist {
		pid, err := item(p, "payment_method_id")
		if err != nil {
			return "", pyErr(err)
		}
		amt, err := item(p, "amount")
		if err != nil {
			return "", pyErr(err)
		}
		refunds = append(refunds, NewObject("transaction_type", "refund", "amount", amt, "payment_method_id", pid))
		gift, err := contains(pid, "gift_card")
		if err != nil {
			return "", pyErr(err)
		}
		if gift {
			if err := s.adjustBalance(userID, pid.(string), amt, false); err != nil {
				return "", err
			}
		}
	}
	o, _ := s.mut(tOrders, id)
	o.Set("status", "cancelled")
	o.Set("cancel_reason", reason)
	ph, _ := o.Get("payment_history")
	o.Set("payment_history", append(ph.([]any), refunds...))
	return jsonResult(o)
}

// checkItems is the item-list check: no id may be asked for more often
// than the order holds it. It returns the offending id.
func checkItems(order *Object, ids []any) (any, bool, error) {
	items, err := list(arg(order, "items"))
	if err != nil {
		return nil, false, err
	}
	have := map[string]int{}
	for _, it := range items {
		iid, err := item(it, "item_id")
		if err != nil {
			return nil, false, err
		}
		if k, ok := iid.(string); ok {
			have[k]++
		}
	}
	want := map[string]int{}
	for _, v := range ids {
		if k, ok := v.(string); ok {
			want[k]++
		}
	}
	for _, v := range ids {
		k, ok := v.(string)
		if !ok || want[k] > have[k] {
			return v, false, nil
		}
	}
	return nil, true, nil
}

// firstItem is the first order item with the given item id.
func firstItem(order *Object, id any) (*Object, error) {
	items, err := list(arg(order, "items"))
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if o, ok := it.(*Object); ok && pyEq(arg(o, "item_id"), id) {
			return o, nil
		}
	}
	return nil, fmt.Errorf("list index out of range")
}

// variant returns the product variant newID of the item's product if it
// exists and is available.
func (s *Session) variant(it *Object, newID any) (*Object, bool, error) {
	pid, err := item(it, "product_id")
	if err != nil {
		return nil, false, err
	}
	k, _, err := dictKey(pid)
	if err != nil {
		return nil, false, err
	}
	prod, ok := s.get(tProducts, k)
	if !ok {
		return nil, false, fmt.Errorf("%s", appendRepr(nil, pid))
	}
	vars, err := item(prod, "variants")
	if err != nil {
		return nil, false, err
	}
	has, err := in(newID, vars)
	if err != nil || !has {
		return nil, false, err
	}
	vv, _ := itemKey(vars, newID)
	v, ok := vv.(*Object)
	if !ok {
		return nil, false, notSubscriptable(vv)
	}
	avail, _ := v.Get("available")
	if b, isBool := avail.(bool); !isBool || !b {
		if !truthy(avail) {
			return nil, false, nil
		}
	}
	return v, true, nil
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case *Object:
		return x.Len() > 0
	}
	return true
}

// priceDifference validates item swaps and sums new − old prices in order.
func (s *Session) priceDifference(order *Object, ids, newIDs []any) (any, error) {
	if bad, ok, err := checkItems(order, ids); err != nil {
		return nil, pyErr(err)
	} else if !ok {
		return nil, toolErr(fmt.Sprintf("%s not found", pyStr(bad)))
	}
	if len(ids) != len(newIDs) {
		return nil, toolErr("the number of items to be exchanged should match")
	}
	var diff any = int64(0)
	for i := range ids {
		it, err := firstItem(order, ids[i])
		if err != nil {
			return nil, pyErr(err)
		}
		v, ok, err := s.variant(it, newIDs[i])
		if err != nil {
			return nil, pyErr(err)
		}
		if !ok {
			return nil, toolErr(fmt.Sprintf("new item %s not found or available", pyStr(newIDs[i])))
		}
		d, err := pySub(arg(v, "price"), arg(it, "price"))
		if err != nil {
			return nil, pyErr(err)
		}
		if diff, err = pyAdd(diff, d); err != nil {
			return nil, pyErr(err)
		}
	}
	return diff, nil
}

// giftCardShort reports whether a gift card method's balance is below amount.
func giftCardShort(m *Object, amount any) (bool, error) {
	if src, _ := m.Get("source"); !pyEq(src, "gift_card") {
		return false, nil
	}
	bal, err := item(m, "balance")
	if err != nil {
		return false, pyErr(err)
	}
	less, err := pyLess(bal, amount)
	if err != nil {
		return false, pyErr(err)
	}
	return less, nil
}

func sortedIDs(ids []any) ([]any, error) {
	out := append([]any(nil), ids...)
	var err error
	sort.SliceStable(out, func(i, j int) bool {
		c, e := pyCmp("<", out[i], out[j])
		if e != nil && err == nil {
			err = e
		}
		return c < 0
	})
	return out, err
}

func exchangeDeliveredOrderItems(s *Session, a *Object) (string, error) {
	id, cur, err := s.orderWithStatus(a, "delivered", "non-delivered order cannot be exchanged")
	if err != nil {
		return "", err
	}
	ids, err := list(arg(a, "item_ids"))
	if err != nil {
		return "", pyErr(err)
	}
	newIDs, err := list(arg(a, "new_item_ids"))
	if err != nil {
		return "", pyErr(err)
	}
	diff, err := s.priceDifference(cur, ids, newIDs)
	if err != nil {
		return "", err
	}
	if diff, err = pyRound2(diff); err != nil {
		return "", pyErr(err)
	}
	pid := arg(a, "payment_method_id")
	_, m, err := s.ownerMethod(cur, pid)
	if err != nil {
		return "", err
	}
	if short, err := giftCardShort(m, diff); err != nil {
		return "", err
	} else if short {
		return "", toolErr("insufficient gift card balance to pay for the price difference")
	}
	sortedOld, err := sortedIDs(ids)
	if err != nil {
		return "", pyErr(err)
	}
	sortedNew, err := sortedIDs(newIDs)
	if err != nil {
		return "", pyErr(err)
	}
	o, _ := s.mut(tOrders, id)
	o.Set("status", "exchange requested")
	o.Set("exchange_items", sortedOld)
	o.Set("exchange_new_items", sortedNew)
	o.Set("exchange_payment_method_id", pid)
	o.Set("exchange_price_difference", diff)
	return jsonResult(o)
}

func newAddress(a *Object) *Object {
	return NewObject("address1", arg(a, "address1"), "address2", arg(a, "address2"), "city", arg(a, "city"),
		"state", arg(a, "state"), "country", arg(a, "country"), "zip", arg(a, "zip"))
}

func modifyPendingOrderAddress(s *Session, a *Object) (string, error) {
	id, _, err := s.orderWithStatus(a, "pending", "non-pending order cannot be modified")
	if err != nil {
		return "", err
	}
	o, _ := s.mut(tOrders, id)
	o.Set("address", newAddress(a))
	return jsonResult(o)
}

func modifyUserAddress(s *Session, a *Object) (string, error) {
	id, err := s.require(tUsers, arg(a, "user_id"), "user not found")
	if err != nil {
		return "", err
	}
	u, _ := s.mut(tUsers, id)
	u.Set("address", newAddress(a))
	return jsonResult(u)
}

func modifyPendingOrderItems(s *Session, a *Object) (string, error) {
	id, cur, err := s.orderWithStatus(a, "pending", "non-pending order cannot be modified")
	if err != nil {
		return "", err
	}
	ids, err := list(arg(a, "item_ids"))
	if err != nil {
		return "", pyErr(err)
	}
	newIDs, err := list(arg(a, "new_item_ids"))
	if err != nil {
		return "", pyErr(err)
	}
	diff, err := s.priceDifference(cur, ids, newIDs)
	if err != nil {
		return "", err
	}
	pid := arg(a, "payment_method_id")
	userID, m, err := s.ownerMethod(cur, pid)
	if err != nil {
		return "", err
	}
	if short, err := giftCardShort(m, diff); err != nil {
		return "", err
	} else if short {
		return "", toolErr("insufficient gift card balance to pay for the new item")
	}
	kind := "refund"
	if c, _ := pyCmp(">", diff, int64(0)); c > 0 {
		kind = "payment"
	}
	amount, err := pyAbs(diff)
	if err != nil {
		return "", pyErr(err)
	}
	o, _ := s.mut(tOrders, id)
	if err := appendPaymentRecord(o, NewObject("transaction_type", kind, "amount", amount, "payment_method_id", pid)); err != nil {
		return "", err
	}
	if src, _ := m.Get("source"); pyEq(src, "gift_card") {
		if err := s.adjustBalance(userID, pid.(string), diff, true); err != nil {
			return "", err
		}
	}
	for i := range ids {
		it, err := firstItem(o, ids[i])
		if err != nil {
			return "", pyErr(err)
		}
		v, _, err := s.variant(it, newIDs[i])
		if err != nil || v == nil {
			return "", pyErr(fmt.Errorf("%s", appendRepr(nil, newIDs[i])))
		}
		it.Set("item_id", newIDs[i])
		it.Set("price", arg(v, "price"))
		it.Set("options", DeepCopy(arg(v, "options")))
	}
	o.Set("status", "pending (item modified)")
	return jsonResult(o)
}

func appendPaymentRecord(o *Object, p *Object) error {
	ph, err := list(arg(o, "payment_history"))
	if err != nil {
		return pyErr(err)
	}
	o.Set("payment_history", append(ph, p))
	return nil
}

func modifyPendingOrderPayment(s *Session, a *Object) (string, error) {
	id, cur, err := s.orderWithStatus(a, "pending", "non-pending order cannot be modified")
	if err != nil {
		return "", err
	}
	pid := arg(a, "payment_method_id")
	userID, m, err := s.ownerMethod(cur, pid)
	if err != nil {
		return "", err
	}
	hist, err := list(arg(cur, "payment_history"))
	if err != nil {
		return "", pyErr(err)
	}
	if len(hist) == 0 {
		return "", pyErr(fmt.Errorf("list index out of range"))
	}
	first, ok := hist[0].(*Object)
	if !ok {
		return "", pyErr(notSubscriptable(hist[0]))
	}
	if len(hist) > 1 || !pyEq(arg(first, "transaction_type"), "payment") {
		return "", toolErr("there should be exactly one payment for a pending order")
	}
	oldPid := arg(first, "payment_method_id")
	if pyEq(oldPid, pid) {
		return "", toolErr("the new payment method should be different from the current one")
	}
	amount := arg(first, "amount")
	if short, err := giftCardShort(m, amount); err != nil {
		return "", err
	} else if short {
		return "", toolErr("insufficient gift card balance to pay for the order")
	}
	o, _ := s.mut(tOrders, id)
	ph, _ := o.Get("payment_history")
	o.Set("payment_history", append(ph.([]any),
		NewObject("transaction_type", "payment", "amount", amount, "payment_method_id", pid),
		NewObject("transaction_type", "refund", "amount", amount, "payment_method_id", oldPid)))
	if src, _ := m.Get("source"); pyEq(src, "gift_card") {
		if err := s.adjustBalance(userID, pid.(string), amount, true); err != nil {
			return "", err
		}
	}
	if gift, err := contains(oldPid, "gift_card"); err != nil {
		return "", pyErr(err)
	} else if gift {
		if err := s.adjustBalance(userID, oldPid.(string), amount, false); err != nil {
			return "", err
		}
	}
	return jsonResult(o)
}

func returnDeliveredOrderItems(s *Session, a *Object) (string, error) {
	id, cur, err := s.orderWithStatus(a, "delivered", "non-delivered order cannot be returned")
	if err != nil {
		return "", err
	}
	pid := arg(a, "payment_method_id")
	if _, _, err := s.ownerMethod(cur, pid); err != nil {
		return "", err
	}
	gift, err := contains(pid, "gift_card")
	if err != nil {
		return "", pyErr(err)
	}
	hist, err := list(arg(cur, "payment_history"))
	if err != nil {
		return "", pyErr(err)
	}
	if !gift {
		if len(hist) == 0 {
			return "", pyErr(fmt.Errorf("list index out of range"))
		}
		if !pyEq(pid, arg(hist[0].(*Object), "payment_method_id")) {
			return "", toolErr("payment method should be either the original payment method or a gift card")
		}
	}
	ids, err := list(arg(a, "item_ids"))
	if err != nil {
		return "", pyErr(err)
	}
	if _, ok, err := checkItems(cur, ids); err != nil {
		return "", pyErr(err)
	} else if !ok {
		return "", toolErr("some item not found")
	}
	sorted, err := sortedIDs(ids)
	if err != nil {
		return "", pyErr(err)
	}
	o, _ := s.mut(tOrders, id)
	o.Set("status", "return requested")
	o.Set("return_items", sorted)
	o.Set("return_payment_method_id", pid)
	return jsonResult(o)
}
