package factory

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

func TestMaskBodyKeepsShapeNotValues(t *testing.T) {
	in := `{"message":{"subject":"$KV.cfg.dbpass","seq":3,"data":"c2VjcmV0","hdrs":"TkFUUy8xLjA="},"config":{"name":"S","subjects":["a.>"]},"password":"pw","token":"tk"}`
	got := maskBody([]byte(in), nil)
	for _, secret := range []string{"c2VjcmV0", "TkFUUy8xLjA=", `"pw"`, `"tk"`} {
		if strings.Contains(got, secret) {
			t.Errorf("maskBody leaks %s: %s", secret, got)
		}
	}
	for _, kept := range []string{`"subject":"$KV.cfg.dbpass"`, `"seq":3`, `"subjects":["a.>"]`, `"data":"<masked>"`} {
		if !strings.Contains(got, kept) {
			t.Errorf("maskBody lost %s: %s", kept, got)
		}
	}
}

func TestMaskBodyHidesRawMessages(t *testing.T) {
	hdr := nats.Header{"Nats-Sequence": []string{"4"}, "X-Secret": []string{"v"}}
	if got := maskBody([]byte(`{"password":"x"}`), hdr); got != "<16 bytes masked>" {
		t.Errorf("a direct get reply body = %q", got)
	}
	if got := headerNames(hdr); got != "Nats-Sequence=4 X-Secret" {
		t.Errorf("headerNames = %q", got)
	}
	if got := maskBody([]byte("not json"), nil); got != "<8 bytes masked>" {
		t.Errorf("a raw body = %q", got)
	}
}
