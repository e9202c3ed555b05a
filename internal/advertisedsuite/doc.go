// Package advertisedsuite measures the advertised rate-limit budget across
// processes: several gateways sharing one Redis call a fake upstream that
// allows a fixed number of requests per window and advertises what is left
// on every answer. Its one test re-executes the test binary as the
// gateways' processes; the package has no other code.
package advertisedsuite
