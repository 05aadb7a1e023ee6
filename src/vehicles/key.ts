// A vehicle as one string across organizations, for the maps that hold vehicles of every
// organization (latest states, rule state, connections): ids never hold a newline.

/** `${organizationId}\n${vehicleId}` */
export type VehicleKey = string;

export const vehicleKey = (organizationId: string, vehicleId: string): VehicleKey => `${organizationId}\n${vehicleId}`;
