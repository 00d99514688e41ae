package harness

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// stream-edit STREAM FIELD=JSON... changes a stream's config directly on
// the server, as natscli's `stream edit` would: it reads the stored config
// (metadata included), sets each field to its JSON value and sends the
// update. Plan scripts use it to make drift outside jetctl.
func cmdStreamEdit(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: stream-edit STREAM FIELD=JSON...")
	}
	nc, _ := jsFor(ts)
	reply, err := nc.Request("$JS.API.STREAM.INFO."+args[0], nil, 10*time.Second)
	ts.Check(err)
	var info struct {
		Config map[string]any `json:"config"`
		Error  any            `json:"error"`
	}
	ts.Check(json.Unmarshal(reply.Data, &info))
	if info.Error != nil {
		ts.Fatalf("stream-edit: %v", info.Error)
	}
	for _, kv := range args[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("stream-edit: %q is not FIELD=JSON", kv)
		}
		var val any
		ts.Check(json.Unmarshal([]byte(v), &val))
		info.Config[k] = val
	}
	body, err := json.Marshal(info.Config)
	ts.Check(err)
	reply, err = nc.Request("$JS.API.STREAM.UPDATE."+args[0], body, 10*time.Second)
	ts.Check(err)
	var resp struct {
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	ts.Check(json.Unmarshal(reply.Data, &resp))
	if (resp.Error != nil) != neg {
		if neg {
			ts.Fatalf("stream-edit: unexpected success")
		}
		ts.Fatalf("stream-edit: %s", resp.Error.Description)
	}
	if resp.Error != nil {
		fmt.Fprintln(ts.Stdout(), resp.Error.Description)
	}
}
