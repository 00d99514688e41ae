package harness

import (
	"fmt"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// Condition gives scripts the conditions of jetctl's tests:
//
//	[stress]  the stress tier runs (JETCTL_STRESS=1, docs/testing.md):
//	          a block under it runs only there, one under [!stress] only
//	          in the default run.
func Condition(cond string) (bool, error) {
	switch cond {
	case "stress":
		return embeddedtest.Stress(), nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}
