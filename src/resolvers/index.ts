import { DateTimeResolver, JSONResolver } from 'graphql-scalars';
import type { Resolvers } from '../generated/graphql';
import { Allocation } from './Allocation';
import { BallotEntry } from './BallotEntry';
import { Allotment, Campaign, CampaignStats, PartnerStats } from './Campaign';
import { Mutation } from './Mutation';
import { Partner } from './Partner';
import { Query } from './Query';
import { Subscription } from './Subscription';
import { AuditEntry, Viewer } from './Viewer';
import { WaitlistEntry } from './WaitlistEntry';
import { WebhookEndpoint } from './WebhookEndpoint';

const totalCount = { totalCount: (connection: { totalCount: () => Promise<number> }) => connection.totalCount() };

export const resolvers: Resolvers = {
  DateTime: DateTimeResolver,
  JSON: JSONResolver,
  Query,
  Mutation,
  Subscription,
  Allotment,
  Campaign,
  CampaignStats,
  PartnerStats,
  Allocation,
  Partner,
  Viewer,
  AuditEntry,
  WebhookEndpoint,
  WaitlistEntry,
  WaitlistEntryConnection: totalCount,
  BallotEntry,
  BallotEntryConnection: totalCount,
  AllocationConnection: totalCount,
  CampaignConnection: totalCount,
  PartnerConnection: totalCount,
  AuditEntryConnection: totalCount,
  WebhookDeliveryConnection: totalCount,
};
