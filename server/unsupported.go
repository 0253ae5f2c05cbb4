package server

import (
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errUnsupported is a request of a key kmsg knows at a version kmsg can
// encode, which the server does not serve at that version (or at all): it
// is answered with UNSUPPORTED_VERSION in that API's own response, never
// by closing the connection, so that a client that sends it without
// looking at ApiVersions (sarama's admin with a configured version,
// kafkajs's admin) reports an error instead of retrying a dead socket.
type errUnsupported struct {
	req    kmsg.Request
	parsed bool // req's body was read: its entries can be mirrored
}

func (e *errUnsupported) Error() string {
	return fmt.Sprintf("api key %d version %d not supported", e.req.Key(), e.req.GetVersion())
}

// unsupportedResponse is req's response at req's version carrying
// UNSUPPORTED_VERSION: in the response's top-level error code when it has
// one, and in every entry mirrored from the request (a topic, a
// partition, a config resource: the response lists whose names match the
// request's, their entries' identifying fields copied), so that a client
// that matches its answers entry by entry finds its error there. A
// request whose body did not parse gets the top-level error alone.
func unsupportedResponse(req kmsg.Request, parsed bool) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rv := reflect.ValueOf(resp).Elem()
	var qv reflect.Value
	if parsed {
		qv = reflect.ValueOf(req).Elem()
	}
	msg := fmt.Sprintf("api key %d version %d is not supported by this server; see ApiVersions", req.Key(), req.GetVersion())
	mirrorError(rv, qv, msg)
	return resp
}

// mirrorError sets dst's ErrorCode (and ErrorMessage, when it is a
// *string) to UNSUPPORTED_VERSION and, for each slice of structs in dst
// whose name is a slice of structs in src too, fills dst's slice with one
// entry per src entry: same-named fields of the same type copied (Topic,
// Partition, ResourceType, ResourceName…), then the same recursively.
// Reflection keeps this one function for every API instead of one error
// builder per key.
func mirrorError(dst, src reflect.Value, msg string) {
	if f := dst.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(kerr.UnsupportedVersion.Code))
	}
	if f := dst.FieldByName("ErrorMessage"); f.IsValid() && f.Type() == reflect.TypeFor[*string]() {
		f.Set(reflect.ValueOf(&msg))
	}
	if !src.IsValid() {
		return
	}
	for i := range dst.NumField() {
		df := dst.Field(i)
		name := dst.Type().Field(i).Name
		sf := src.FieldByName(name)
		if !sf.IsValid() || !df.CanSet() {
			continue
		}
		switch {
		case df.Kind() == reflect.Slice && df.Type().Elem().Kind() == reflect.Struct &&
			sf.Kind() == reflect.Slice && sf.Type().Elem().Kind() == reflect.Struct:
			out := reflect.MakeSlice(df.Type(), sf.Len(), sf.Len())
			for j := range sf.Len() {
				e := out.Index(j)
				if d, ok := e.Addr().Interface().(interface{ Default() }); ok {
					d.Default()
				}
				mirrorError(e, sf.Index(j), msg)
			}
			df.Set(out)
		case name != "ErrorCode" && name != "ErrorMessage" && name != "Version" &&
			df.Kind() != reflect.Slice && df.Kind() != reflect.Struct && sf.Type() == df.Type():
			df.Set(sf)
		}
	}
}
