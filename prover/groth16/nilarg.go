package groth16

import "reflect"

// isNil reports whether v is nil or an interface holding a nil pointer,
// map, slice, func or channel (a typed nil: a (*cs.R1CS)(nil) passed as a
// constraint.ConstraintSystem). The library refuses those with an error
// where a method call on them would panic.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
