-- Campaign ids in the order campaigns are made (RFC 9562 UUID version 7: 48 bits of Unix time in
-- milliseconds, then 74 random bits), so a new campaign's tickets go to the right-hand end of every
-- index that starts with campaign_id — the primary key, the code index, the claim's index — where
-- PostgreSQL appends to its last page instead of splitting pages in the middle of the index. A
-- million generated tickets into a campaign whose random (version 4) id fell among the others' ran
-- at 101-108k rows/s here, into the newest campaign at 218-262k (docs/BENCHMARKS.md, "Loads at COPY
-- speed"). A guess still has 74 random bits to hit; a campaign's creation time is no secret
-- (Campaign.createdAt).
-- (PostgreSQL 18 has uuidv7(); 13-17 do not.)
CREATE OR REPLACE FUNCTION "tessera_uuid_v7"() RETURNS uuid
  LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
    SELECT encode(
             set_bit(set_bit(
               overlay(uuid_send(gen_random_uuid())
                       PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                       FROM 1 FOR 6),
               52, 1), 53, 1),
             'hex')::uuid
$$;

ALTER TABLE "campaigns" ALTER COLUMN "id" SET DEFAULT tessera_uuid_v7();
