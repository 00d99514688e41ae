package harness

import (
	"context"
	"fmt"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/jetctl/jetctl/pkg/migrate"
)

// Condition answers the scripts' own conditions:
//
//	[migrate-engine]  pkg/migrate's engine is built: migrate.Replace and
//	                  EstimateReplace are not the placeholders that stand
//	                  for them until branch migrate is merged.
//
// The apply --migrate scripts skip without the engine, saying so, rather
// than fail or pretend. Remove the condition with the placeholders.
func Condition(cond string) (bool, error) {
	switch cond {
	case "migrate-engine":
		return migrateEngineBuilt(), nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// migrateEngineBuilt calls EstimateReplace without a connection: the
// placeholder answers "not built yet" at once; the engine fails otherwise
// (or panics on the nil connection, which counts as built).
func migrateEngineBuilt() (built bool) {
	defer func() {
		if recover() != nil {
			built = true
		}
	}()
	_, err := migrate.EstimateReplace(context.Background(), nil, "")
	return err == nil || !strings.Contains(err.Error(), "not built yet")
}

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
