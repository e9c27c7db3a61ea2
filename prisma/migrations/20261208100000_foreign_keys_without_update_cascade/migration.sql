-- Foreign keys without ON UPDATE CASCADE: ids never change, and Citus refuses a cascade on the
-- distribution column (campaign_id) of a distributed table (docs/SCALING.md, "Citus"). One shape on
-- plain PostgreSQL and on Citus. Each key is dropped and added again in one statement per table.
ALTER TABLE allocations DROP CONSTRAINT allocations_campaign_id_fkey, ADD CONSTRAINT allocations_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE allocations DROP CONSTRAINT allocations_campaign_id_ticket_id_fkey, ADD CONSTRAINT allocations_campaign_id_ticket_id_fkey FOREIGN KEY (campaign_id, ticket_id) REFERENCES tickets(campaign_id, id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE allocations DROP CONSTRAINT allocations_partner_id_fkey, ADD CONSTRAINT allocations_partner_id_fkey FOREIGN KEY (partner_id) REFERENCES partners(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE allotments DROP CONSTRAINT allotments_campaign_id_fkey, ADD CONSTRAINT allotments_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE allotments DROP CONSTRAINT allotments_partner_id_fkey, ADD CONSTRAINT allotments_partner_id_fkey FOREIGN KEY (partner_id) REFERENCES partners(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE ballot_entries DROP CONSTRAINT ballot_entries_campaign_id_fkey, ADD CONSTRAINT ballot_entries_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE ballot_entries DROP CONSTRAINT ballot_entries_partner_id_fkey, ADD CONSTRAINT ballot_entries_partner_id_fkey FOREIGN KEY (partner_id) REFERENCES partners(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE ballots DROP CONSTRAINT ballots_campaign_id_fkey, ADD CONSTRAINT ballots_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE partner_quotas DROP CONSTRAINT partner_quotas_campaign_id_fkey, ADD CONSTRAINT partner_quotas_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns(id) ON UPDATE RESTRICT ON DELETE CASCADE;
ALTER TABLE partner_quotas DROP CONSTRAINT partner_quotas_partner_id_fkey, ADD CONSTRAINT partner_quotas_partner_id_fkey FOREIGN KEY (partner_id) REFERENCES partners(id) ON UPDATE RESTRICT ON DELETE CASCADE;
ALTER TABLE tickets DROP CONSTRAINT tickets_campaign_id_fkey, ADD CONSTRAINT tickets_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE waitlist_entries DROP CONSTRAINT waitlist_entries_campaign_id_fkey, ADD CONSTRAINT waitlist_entries_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE waitlist_entries DROP CONSTRAINT waitlist_entries_partner_id_fkey, ADD CONSTRAINT waitlist_entries_partner_id_fkey FOREIGN KEY (partner_id) REFERENCES partners(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_endpoint_id_fkey, ADD CONSTRAINT webhook_deliveries_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_partner_id_fkey, ADD CONSTRAINT webhook_endpoints_partner_id_fkey FOREIGN KEY (partner_id) REFERENCES partners(id) ON UPDATE RESTRICT ON DELETE RESTRICT;
