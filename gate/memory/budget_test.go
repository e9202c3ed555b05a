package memory_test

import (
	"testing"

	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

func TestBudgetContract(t *testing.T) {
	contracttest.RunBudget(t, func(t *testing.T) (gate.BudgetGate, contracttest.Clock) {
		clk := contracttest.NewFakeClock()
		return memory.NewBudget(memory.WithClock(clk)), clk
	})
}
