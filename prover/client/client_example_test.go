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

// Several proving hosts behind one client: each request id goes to one
// daemon (the same one on every retry, while it is up and serving), and the
// job id names it, so Await and Cancel find the job wherever it is.
func ExampleDialAddrs() {
	c, err := client.DialAddrs([]string{"prover-1:9820", "prover-2:9820"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	job, err := c.Submit(ctx, client.Request{RequestID: "porep-c2-f01234-17", Circuit: "mulchain", Constraints: 1 << 20})
	if err != nil {
		log.Print(err)
		return
	}
	fmt.Println(job.ID) // e.g. prover-2:9820/job-1f2e-3
	res, err := c.Await(ctx, job.ID, 10*time.Minute)
	if err != nil {
		log.Print(err)
		return
	}
	fmt.Printf("proof %d bytes, trace %s\n", len(res.Proof), res.TraceID)
}
