// Command crasher faults in C called from Go, for the test of package
// cgotraceback.
package main

/*
void cgotb_test_outer(void);
*/
import "C"

import "github.com/spank-otel/spank-otel/internal/cgotraceback"

func init() { cgotraceback.Install() }

func main() {
	C.cgotb_test_outer()
}
