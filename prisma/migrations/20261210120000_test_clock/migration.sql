-- Test mode (issue 31): how far advanceTestClock has moved a test campaign's clock, in seconds.
-- The clock is moved by moving the campaign's deadlines the other way (src/db/testClock.ts); this
-- column only keeps the sum, for Campaign.testClock. Always 0 for a live campaign.
ALTER TABLE "campaigns" ADD COLUMN "test_clock_seconds" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_test_clock_live" CHECK ("test" OR "test_clock_seconds" = 0);
