-- A gang's topology request (flotilla.GangTopology): the topology's name
-- and the level label keys it requires or prefers; '' when not set.
ALTER TABLE jobs ADD COLUMN gang_topology text NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN gang_required text NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN gang_preferred text NOT NULL DEFAULT '';
