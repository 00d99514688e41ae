package harness

import (
	"fmt"

	"github.com/rogpeppe/go-internal/testscript"
)

// obj-put BUCKET NAME DATA stores an object (the store must exist).
func cmdObjPut(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: obj-put BUCKET NAME DATA")
	}
	_, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	store, err := js.ObjectStore(c, args[0])
	ts.Check(err)
	_, err = store.PutString(c, args[1], args[2])
	ts.Check(err)
}

// obj-get BUCKET NAME prints an object's content and a newline.
func cmdObjGet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: obj-get BUCKET NAME")
	}
	_, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	store, err := js.ObjectStore(c, args[0])
	ts.Check(err)
	s, err := store.GetString(c, args[1])
	ts.Check(err)
	fmt.Fprintln(ts.Stdout(), s)
}
