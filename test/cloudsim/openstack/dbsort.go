package openstack

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// compareColumn orders two values of one database column as Neutron's and
// Octavia's MySQL sorts them ascending: NULL first, then by value
// (false before true).
func compareColumn(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch x := a.(type) {
	case string:
		y, _ := b.(string)
		return strings.Compare(x, y)
	case int:
		y, _ := b.(int)
		return cmp.Compare(x, y)
	case float64:
		y, _ := b.(float64)
		return cmp.Compare(x, y)
	case bool:
		y, _ := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case time.Time:
		y, _ := b.(time.Time)
		return x.Compare(y)
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}
