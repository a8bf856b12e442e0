package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/client"
)

// A Curio task asking the daemon for a WindowPoSt proof. The task span of
// otelcuzk.RunTask is in ctx, so the daemon's engine.job joins its trace;
// the request id makes a retry of the same task return the same proof.
func ExampleClient_Prove() {
	c, err := client.Dial("127.0.0.1:9820")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	task := otelcuzk.Task{ID: 4711, Name: "WdPost", MinerID: "f01234", SectorNumber: 17}
	_, err = otelcuzk.RunTask(context.Background(), task, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		res, err := c.Prove(ctx, client.Request{
			RequestID: "wdpost-4711-f01234-17", Circuit: "merkle", Constraints: 1 << 16,
			Priority: client.Critical, MinerID: task.MinerID, SectorNumber: task.SectorNumber,
			TaskID: task.ID, TaskName: task.Name, Verify: true,
		})
		switch status.Code(err) {
		case codes.OK:
			fmt.Printf("proof %d bytes, trace %s, prove %v\n", len(res.Proof), res.TraceID, res.Timings.Prove)
			return true, nil
		case codes.ResourceExhausted:
			return false, nil // the daemon is full: harmonytask retries later
		}
		return false, err
	})
	if err != nil {
		log.Print(err)
	}
}
